"""The dense span: a timeline leaves out the few jobs that started far from the others."""

import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.timeline import build_timeline, left_out
from iosight.timeline._span import MIN_MARGIN_S, fences

OLD_LOG = "*2.x__example-output__carns_mpi-io-test-ppc32-2.2.5_id100_1-1-168-*"


def test_fences_are_three_iqrs_past_the_quartiles_and_never_closer_than_the_margin():
    day = 86400.0
    assert fences(1000 * day, 1100 * day) == (700 * day, 1400 * day)
    assert fences(1000 * day, 1001 * day) == (1000 * day - MIN_MARGIN_S, 1001 * day + MIN_MARGIN_S)


@pytest.fixture
def old_and_new(shared, tmp_path):
    """A Darshan 2.2.5 log whose job started 168 s after 1970 (its clock was not set) and
    the 7 logs of a 2022 workflow (real logs)."""
    from iosight.warehouse import Warehouse, ingest

    root = shared("darshan-logs")
    paths = [*root.glob(OLD_LOG), *root.glob("*nonmpi_workflow*")]
    assert len(paths) == 8
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest(paths, wh, workers=2)
    return wh


def _bytes(wh, where: str = "true") -> float:
    """POSIX + STDIO bytes, read and written, of the jobs matching ``where``."""
    return sum(
        wh.sql(
            f'select sum("{m}_BYTES_READ" + "{m}_BYTES_WRITTEN") s from {m.lower()} '
            f"join jobs using (job_key) where {where}"
        )["s"].fillna(0).item()
        for m in ("POSIX", "STDIO")
    )


def test_dense_span_leaves_out_the_1970_job_and_says_so(old_and_new):
    wh = old_and_new
    t = build_timeline(wh)
    left = left_out(t)
    assert left is not None and left.jobs == 1 and left.first == left.last == 168.0
    assert left.bytes == _bytes(wh, "start_time < 1e9") > 0
    df = t.to_pandas()
    assert df["bin_start"].min() >= 1.6e9 and len(df) < 30  # the workflow's 40 minutes
    kept = df["read_bytes"].sum() + df["write_bytes"].sum()
    assert kept == pytest.approx(_bytes(wh) - left.bytes, rel=1e-12)
    assert left.kept[0] == wh.sql("select min(start_time) t from jobs where start_time > 1e9")[
        "t"
    ].item()
    whole = build_timeline(wh, bin_width=86400.0, span="all")
    assert left_out(whole) is None and whole.num_rows > 19_000  # 1970 to 2022 in days
    df = whole.to_pandas()
    assert df["read_bytes"].sum() + df["write_bytes"].sum() == pytest.approx(_bytes(wh))


def test_cli_says_what_the_dense_span_left_out(old_and_new):
    r = CliRunner().invoke(app, ["timeline", "build", "-w", str(old_and_new.path)])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("left out"))
    assert line.startswith("left out 1 job (") and "started 1970-01-01 to 1970-01-01" in line
    assert line.endswith("(2022-12-15 to 2022-12-15); --span all keeps them")
    r = CliRunner().invoke(app, ["timeline", "build", "-w", str(old_and_new.path), "--span", "x"])
    assert r.exit_code == 1 and "'span' parameter must be 'dense' or 'all'" in r.output
