"""Summit 2021 job totals (real): ingested, then spread over each job's run time."""

import numpy as np
import pytest

from iosight.timeline import VALUE_COLUMNS, build_timeline


@pytest.fixture(scope="module")
def app1(tmp_path_factory):
    """Summit's App1 (2,884 real jobs) ingested, its raw rows, its 5-minute timeline and
    the warehouse."""
    import pandas as pd

    from iosight.warehouse import Warehouse, ingest
    from tests_support import shared_path

    src = shared_path("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    wh = Warehouse(tmp_path_factory.mktemp("summit") / "wh", create=True)
    ingest([src], wh, workers=1)
    return pd.read_parquet(src), build_timeline(wh).to_pandas(), wh


def _bytes(raw, counter: str) -> np.ndarray:
    """POSIX + STDIO bytes of each job (MPI-IO is already in POSIX)."""
    cols = [raw[f"total_{layer}_{counter}"].clip(lower=0) for layer in ("POSIX", "STDIO")]
    return np.nansum(np.column_stack(cols), axis=1)


def test_summit_app_timeline(app1):
    raw, t, _ = app1
    for d, c in (("read", "BYTES_READ"), ("write", "BYTES_WRITTEN")):
        assert t[f"{d}_bytes"].sum() == pytest.approx(_bytes(raw, c).sum(), rel=1e-12)
    origin = np.floor(raw["start_time"].min() / 300) * 300
    span = raw["end_time"].max() - origin
    assert len(t) == int(span // 300) + 1
    assert (np.diff(t["bin_start"]) == 300).all()
    # a job is active in the bins from floor(start) to ceil(end) - 1 (at least its first)
    first = np.floor((raw["start_time"] - origin) / 300)
    last = np.maximum(np.ceil((raw["end_time"] - origin) / 300) - 1, first)
    assert t["active_jobs"].sum() == (last - first + 1).sum()


def test_summit_timeline_is_exact(app1):
    """Bins no job runs in are exactly 0, none is negative, and sampled bins (the busiest
    and random ones) are within a byte of an exact computation with ``Fraction``s."""
    from tests_support import exact_bins, max_abs_error

    raw, t, _ = app1
    idle = t["active_jobs"] == 0
    assert idle.sum() > 10_000
    assert (t.loc[idle, list(VALUE_COLUMNS)] == 0).all().all()
    assert (t[list(VALUE_COLUMNS)] >= 0).all().all()
    rng = np.random.default_rng(0)
    for d, c in (("read", "BYTES_READ"), ("write", "BYTES_WRITTEN")):
        rows = np.union1d(t[f"{d}_bytes"].nlargest(20).index, rng.choice(len(t), 40))
        start = raw["start_time"].to_numpy(float)
        end = np.maximum(raw["end_time"].to_numpy(float), start)
        want = exact_bins(start, end, _bytes(raw, c), 300.0, t["bin_start"].to_numpy()[rows])
        got = t[f"{d}_bytes"].to_numpy()[rows]
        assert max_abs_error(got, want) <= 1


def test_known_sums_equal_an_explicit_spread(app1):
    """The sums per (bin, known-at bin) of jobs without known_at (known at their end)
    against tests_support.known_frame: each job's bytes split by explicit fractions."""
    import pandas as pd

    from iosight.timeline import known_sums
    from tests_support import known_frame

    raw, t, wh = app1
    jobs = pd.DataFrame({"start_time": raw["start_time"], "end_time": raw["end_time"],
                         "read_bytes": _bytes(raw, "BYTES_READ"),
                         "write_bytes": _bytes(raw, "BYTES_WRITTEN")})  # fmt: skip
    want = known_frame(jobs, t["bin_start"].to_numpy()).set_index(["bin_start", "known_start"])
    got = known_sums(wh).set_index(["bin_start", "known_start"])
    both = got.merge(want, "outer", left_index=True, right_index=True, suffixes=("", "_want"))
    both = both.fillna(0)
    for c in ("read_bytes", "write_bytes"):
        assert both[c].to_numpy() == pytest.approx(both[f"{c}_want"].to_numpy(), rel=1e-9, abs=1)
    bins, known = (got.index.get_level_values(i) for i in (0, 1))
    assert (known >= bins).all() and (known > bins).mean() > 0.5
