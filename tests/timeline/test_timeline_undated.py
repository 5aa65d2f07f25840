"""Jobs without a start time are left out of the timeline, and counted: the pre-release
3.4 Darshan logs whose job record is garbage are read for their records (job fields
unknown), and their bytes have no time to land on."""

from typer.testing import CliRunner

from iosight.cli import app
from iosight.timeline import build_timeline, undated_jobs
from iosight.warehouse import Warehouse, ingest
from tests_support import garbage_job_logs


def test_jobs_without_start_are_left_out_and_counted(shared, tmp_path):
    plain = sorted(shared("darshan-logs").glob("*dlio_logs*2110482*"))
    assert plain
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest(garbage_job_logs() + plain, wh, workers=1)
    assert wh.sql("select count(*) n from jobs where start_time is null")["n"].item() == 6
    only = Warehouse(tmp_path / "only", create=True)
    ingest(plain, only, workers=1)
    got = build_timeline(wh, bin_width=3600.0, span="all")
    want = build_timeline(only, bin_width=3600.0, span="all")
    assert undated_jobs(got) == 6 and undated_jobs(want) == 0
    assert got.replace_schema_metadata(None).equals(want)
    out = CliRunner().invoke(app, ["timeline", "build", "-w", str(tmp_path / "wh")])
    assert out.exit_code == 0, out.output
    assert "left out 6 jobs without a start time" in out.output
