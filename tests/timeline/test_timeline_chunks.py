"""A timeline streamed in chunks of jobs equals the one-shot build."""

import numpy as np
import pyarrow as pa
import pytest

from iosight.synth.facility import FacilityConfig, generate_facility
from iosight.timeline import build_timeline
from iosight.warehouse import Warehouse


class _Steps:
    def __init__(self):
        self.total = None

    def start(self, total, description):
        self.total = total

    def advance(self, n=1, **fields):
        pass

    def finish(self):
        pass


@pytest.fixture(scope="module")
def facility(tmp_path_factory):
    """A SYNTHETIC facility (three weeks: POSIX, STDIO, job totals) plus DXT segments and
    heatmap bins for some of its POSIX records, so that every placement path runs."""
    wh = Warehouse(tmp_path_factory.mktemp("facility") / "wh", create=True)
    generate_facility(wh, FacilityConfig(months=0.7, jobs_per_day=120, seed=3))
    rng = np.random.default_rng(0)
    rec = wh.sql(
        "select job_key, rank, record_id, POSIX_F_READ_START_TIMESTAMP as s, "
        "POSIX_F_READ_END_TIMESTAMP as e from posix where POSIX_BYTES_READ > 0 "
        "order by job_key, record_id limit 300"
    )
    dxt, heat = rec.iloc[::3], rec.iloc[1::3].drop_duplicates("job_key")
    heat = heat[~heat["job_key"].isin(dxt["job_key"])]
    seg = np.repeat(np.arange(len(dxt)), 3)
    start = (
        dxt["s"].to_numpy()[seg]
        + rng.uniform(0, 1, seg.size) * (dxt["e"].to_numpy() - dxt["s"].to_numpy())[seg]
    )
    wh.commit(
        {
            "dxt_posix": [
                pa.table(
                    {
                        "job_key": dxt["job_key"].to_numpy()[seg],
                        "rank": np.where(dxt["rank"].to_numpy() < 0, 0, dxt["rank"])[seg],
                        "record_id": pa.array(dxt["record_id"].to_numpy()[seg], pa.uint64()),
                        "seq": np.tile([0, 1, 2], len(dxt)),
                        "op": ["read"] * seg.size,
                        "offset": np.zeros(seg.size, np.int64),
                        "length": rng.integers(1, 10_000, seg.size),
                        "start": start,
                        "end": start + rng.exponential(5, seg.size),
                    }
                )
            ],
            "heatmap": [
                pa.table(
                    {
                        "job_key": np.repeat(heat["job_key"].to_numpy(), 2),
                        "module": ["POSIX"] * (2 * len(heat)),
                        "rank": np.full(2 * len(heat), -1),
                        "record_id": np.zeros(2 * len(heat), np.int64),
                        "bin": np.tile([0, 3], len(heat)),
                        "bin_width": np.full(2 * len(heat), 200.0),
                        "bin_start": np.tile([0.0, 600.0], len(heat)),
                        "read_bytes": rng.integers(1, 1000, 2 * len(heat)),
                        "write_bytes": np.zeros(2 * len(heat), np.int64),
                    }
                )
            ],
        }
    )
    return wh


def _same(got, ref):
    assert got["bin_start"].tolist() == ref["bin_start"].tolist()
    for col in ref.columns:  # chunks add in another order: rounding of the largest bin
        tol = 1e-12 * np.abs(ref[col]).max()
        assert np.allclose(got[col], ref[col], rtol=1e-12, atol=tol), col


@pytest.mark.parametrize("chunk_jobs", [400, 1500])
def test_chunks_equal_one_shot(facility, chunk_jobs):
    job_count = int(facility.sql("select count(*) as n from jobs")["n"].iloc[0])
    assert job_count > 2000
    one = build_timeline(facility, bin_width=600, chunk_jobs=job_count).to_pandas()
    steps = _Steps()
    got = build_timeline(facility, bin_width=600, chunk_jobs=chunk_jobs, progress=steps)
    _same(got.to_pandas(), one)
    # one step per query per chunk: jobs; POSIX read and write, each plain, DXT and
    # heatmap; STDIO read and write, each plain and heatmap; job totals
    chunks = steps.total / (1 + 2 * 3 + 2 * 2 + 1)
    assert chunks == -(-job_count // chunk_jobs)
    assert one["read_bytes"].sum() == pytest.approx(
        facility.sql(
            "select (select sum(POSIX_BYTES_READ) from posix) + "
            "(select sum(STDIO_BYTES_READ) from stdio) as s"
        )["s"].iloc[0],
        rel=1e-9,
    )


def test_chunks_and_window(facility):
    lo, hi = facility.sql("select quantile(start_time, 0.3) as lo, "
                          "quantile(start_time, 0.6) as hi from jobs").iloc[0]  # fmt: skip
    one = build_timeline(facility, bin_width=900, since=lo, until=hi, chunk_jobs=10**9)
    got = build_timeline(facility, bin_width=900, since=lo, until=hi, chunk_jobs=50)
    _same(got.to_pandas(), one.to_pandas())


def test_chunk_jobs_must_be_positive(facility):
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="chunk_jobs"):
        build_timeline(facility, chunk_jobs=0)


def test_cli_chunk_jobs(facility):
    from typer.testing import CliRunner

    from iosight.cli import app
    from iosight.timeline import load_timeline

    one = build_timeline(facility, bin_width=3600, chunk_jobs=10**9).to_pandas()
    args = ["timeline", "build", "-w", str(facility.path), "--bin", "1h"]
    r = CliRunner().invoke(app, [*args, "--chunk-jobs", "800"])
    assert r.exit_code == 0, r.output
    _same(load_timeline(facility).reset_index(drop=True), one)
    bad = CliRunner().invoke(app, [*args, "--chunk-jobs", "0"])
    assert bad.exit_code != 0 and "chunk_jobs" in bad.output and "Traceback" not in bad.output


def test_cli_help_states_the_library_default():
    """`timeline build --help` repeats the default (the CLI module imports no timeline
    code at start-up), so this keeps the two in step."""
    import inspect

    from typer.testing import CliRunner

    from iosight.cli import app

    default = inspect.signature(build_timeline).parameters["chunk_jobs"].default
    result = CliRunner().invoke(app, ["timeline", "build", "--help"], terminal_width=200)
    assert result.exit_code == 0 and f"(default {default:,})" in result.output


def test_footers_kept_on_the_warehouses_views_not_in_a_key_range(facility, monkeypatch):
    """One chunk of every key reads the warehouse's views, which unite every file by
    name, with DuckDB's Parquet footer cache on (without it each scan's bind parses every
    footer again); a chunk of a key range reads its own files with the cache off (it held
    every listed file's footer to the chunk's end: docs/warehouse.md, "What a chunk
    lists"); both under the build's memory cap, and the warehouse's settings are as
    before once it streamed."""
    import iosight.timeline._build as build

    con = facility.connect()
    con.execute("set parquet_metadata_cache = false")
    con.execute("set memory_limit = '2GiB'")
    seen = {"streaming": set(), "after": set()}

    def settings(c):
        return c.execute(
            "select current_setting('parquet_metadata_cache')::varchar, "
            "current_setting('memory_limit')::varchar"
        ).fetchall()[0]

    batches, undated = build._batches, build._count_undated

    def streaming(reader, query):
        seen["streaming"].add((reader is facility, *settings(reader.connect([]))))
        yield from batches(reader, query)

    def after(*args):  # called once the sums are streamed, before the write
        seen["after"].add(settings(con))
        return undated(*args)

    monkeypatch.setattr(build, "_batches", streaming)
    monkeypatch.setattr(build, "_count_undated", after)
    build_timeline(facility, bin_width=600, chunk_jobs=10**6)
    assert seen["streaming"] == {(True, "true", "244.1 MiB")}
    seen["streaming"].clear()
    build_timeline(facility, bin_width=600, chunk_jobs=1500)
    assert seen["streaming"] == {(False, "false", "244.1 MiB")}
    assert seen["after"] == {("false", "2.0 GiB")}


def test_chunks_hold_about_as_many_jobs_each(tmp_path):
    """The key ranges of a build's chunks hold even shares of the jobs: 20,000 jobs in
    chunks of 1,000 are cut at the keys' quantiles, each within 1 % of 1,000 (the
    build's peak is its largest chunk's; with 256 sampled keys a chunk, as before, one
    held 1,135)."""
    import hashlib

    from iosight.timeline._build import _key_ranges

    wh = Warehouse(tmp_path / "wh", create=True)
    keys = [hashlib.blake2b(str(i).encode(), digest_size=16).hexdigest() for i in range(20_000)]
    start = np.arange(20_000, dtype=np.float64) * 60.0
    jobs = pa.table({"job_key": keys, "start_time": start, "end_time": start + 600.0})
    wh.write_table("jobs", jobs)
    ranges = _key_ranges(wh, "true", 1_000)
    assert len(ranges) == 20 and ranges[0][0] is None and ranges[-1][1] is None
    counts = [
        sum((lo is None or k >= lo) and (hi is None or k < hi) for k in keys) for lo, hi in ranges
    ]
    assert sum(counts) == 20_000
    assert max(counts) <= 1_010 and min(counts) >= 990, counts
