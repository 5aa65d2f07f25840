"""The dense span: a timeline leaves out the few jobs that started far from the others."""

import numpy as np
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
        )["s"]
        .fillna(0)
        .item()
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
    assert (
        left.kept[0]
        == wh.sql("select min(start_time) t from jobs where start_time > 1e9")["t"].item()
    )
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


def _starts(n: int, seed: int) -> np.ndarray:
    """SYNTHETIC job starts over a year, many of them equal (whole minutes, bursts)."""
    rng = np.random.default_rng(seed)
    return np.floor(rng.gamma(0.7, 8e6, n) / 60.0) * 60.0 + 1.6e9


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8, 101, 2000])
def test_quantile_cont_equals_duckdb_bit_for_bit(n):
    import duckdb

    from iosight.timeline._span import quantile_cont

    starts = _starts(n, n)
    con = duckdb.connect()
    con.register("s", {"x": starts})
    want = con.execute("select quantile_cont(x, 0.25), quantile_cont(x, 0.75) from s").fetchone()
    assert (quantile_cont(starts, 0.25), quantile_cont(starts, 0.75)) == want
    assert np.isclose(quantile_cont(starts, 0.25), np.quantile(starts, 0.25), rtol=1e-12)


def test_quartiles_with_new_starts_equal_those_of_all_starts_or_say_they_cannot():
    """SYNTHETIC starts in increments: the fences and nearest starts found from the
    stored windows and the new starts alone equal those of every start, and ``moved``
    says exactly when a fence crossed an old start; once a quartile leaves its window,
    ``fences`` says so (None) instead of guessing. Each step starts from the summary as
    a timeline keeps it (``to_bytes``, read back)."""
    import numpy as np

    from iosight.timeline._span import Quartiles, fences_of, outside, quartiles_of

    starts = _starts(1103, 1)
    starts = np.concatenate([starts, starts.max() + 60.0 * np.arange(1, 201)])  # 200 late
    seen = 1000
    summary = quartiles_of(starts[:seen], fences_of(starts[:seen]), window=64)
    answered = moved = 0
    for step in (5, 1, 30, 7, 60, 200):
        kept = Quartiles.from_bytes(summary.to_bytes())
        assert (kept.n, kept.near) == (summary.n, summary.near) and None in kept.near
        for (f1, w1), (f2, w2) in zip(kept.windows, summary.windows, strict=True):
            assert f1 == f2 and np.array_equal(w1, w2)
        summary = kept
        new = starts[seen : seen + step]
        old_bounds = fences_of(starts[:seen])
        added = summary.add(new, window=64)
        seen += step
        want = fences_of(starts[:seen])
        bounds = added.fences()
        if bounds is None:
            break
        assert bounds == want
        old = starts[: seen - step]
        crossed = np.any(outside(old, old_bounds) != outside(old, bounds))
        assert summary.moved(old_bounds, bounds) == crossed
        moved += crossed
        fresh = quartiles_of(starts[:seen], want, window=64)  # an update's fallback
        summary = fresh if crossed else added.near_to(bounds, new)
        assert summary.near == fresh.near
        answered += 1
    assert answered == 5 and bounds is None  # the 200 late starts carry q3 past its window
    assert 0 < moved < answered  # a fence moved past an old start, and not always
    np.testing.assert_array_equal(summary.windows[0][1], np.sort(summary.windows[0][1]))


def test_dense_quartiles_in_sql_equal_those_in_numpy(warehouse):
    """SYNTHETIC jobs: what a full build stores (SQL) is what an update computes."""
    import pyarrow as pa

    from iosight.timeline._build import dense_quartiles
    from iosight.timeline._span import fences_of, quartiles_of

    starts = _starts(2500, 2)
    keys = [f"j{i}" for i in range(len(starts))]
    warehouse.commit({"jobs": [pa.table({"job_key": keys, "start_time": starts})]})
    bounds = fences_of(starts)
    got = dense_quartiles(warehouse, "j.start_time is not null", bounds)
    want = quartiles_of(starts, bounds)
    assert (got.n, got.near) == (want.n, want.near)
    for (f1, w1), (f2, w2) in zip(got.windows, want.windows, strict=True):
        assert f1 == f2
        np.testing.assert_array_equal(w1, w2)
