"""A timeline as of T (issue #27) equals one built from only the jobs known by T, chosen
here independently of the timeline's SQL: a copy of a warehouse of real logs that holds
only those jobs, and Summit job totals binned by ``timeline_from_job_totals`` (pandas + numpy)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight.timeline import (
    VALUE_COLUMNS,
    build_options_of,
    build_timeline,
    timeline_from_job_totals,
)
from iosight.warehouse import Warehouse, ingest
from tests_support import assert_same_timeline, shared_path


@pytest.fixture(scope="module")
def app1() -> pd.DataFrame:
    """Summit's App1 job totals (2,884 real jobs)."""
    path = shared_path("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    return pd.read_parquet(path)


@pytest.fixture(scope="module")
def examples(example_warehouse, tmp_path_factory) -> Warehouse:
    """PyDarshan's example logs (real, 2017-2023, with DXT): a copy of the session's
    warehouse of them, since building a timeline writes it."""
    import shutil

    copy = tmp_path_factory.mktemp("as-of") / "wh"
    return Warehouse(shutil.copytree(example_warehouse.path, copy))


def _only_jobs_ended_by(wh: Warehouse, t: float, path) -> Warehouse:
    """A copy of ``wh`` holding only the jobs that ended by ``t`` (chosen with pandas, and
    every other job's rows deleted from every table)."""
    import shutil

    copy = Warehouse(shutil.copytree(wh.path, path))
    jobs = copy.jobs()
    later = jobs.loc[~(jobs["end_time"] <= t), "job_key"].tolist()
    assert 0 < len(later) < len(jobs)
    tables = [n for n in copy.tables() if "job_key" in copy.column_names(n)]
    copy.commit({}, delete_keys={n: later for n in tables})
    return copy


def test_as_of_on_real_logs_equals_a_warehouse_of_the_logs_known_then(examples, tmp_path):
    wh = examples
    t = float(wh.jobs()["end_time"].median())
    got = build_timeline(wh, bin_width=86400.0, as_of=t)
    assert build_options_of(got)["as_of"] == t
    known_then = _only_jobs_ended_by(wh, t, tmp_path / "then")
    assert_same_timeline(got.to_pandas(), build_timeline(known_then, bin_width=86400.0).to_pandas())
    whole = build_timeline(wh, bin_width=86400.0).to_pandas()
    assert got.to_pandas()["write_bytes"].sum() < whole["write_bytes"].sum()


def test_as_of_on_summit_job_totals_equals_binning_the_jobs_ended_by_then(app1, tmp_path):
    wh = Warehouse(tmp_path / "wh", create=True)
    path = tmp_path / "App1.parquet"
    app1.to_parquet(path)
    ingest([path], wh, workers=1)
    t = float(np.quantile(app1["end_time"], 0.3))
    got = build_timeline(wh, as_of=t, span="all").to_pandas().set_index("bin_start")
    want = timeline_from_job_totals(app1[app1["end_time"] <= t]).to_pandas()
    want = want.set_index("bin_start").reindex(got.index, fill_value=0.0)
    assert len(got) >= len(want) > 1000 and got["active_jobs"].sum() > 0
    for col in VALUE_COLUMNS:
        np.testing.assert_allclose(got[col], want[col], rtol=1e-12, atol=0, err_msg=col)
    np.testing.assert_array_equal(got["active_jobs"], want["active_jobs"])
    assert got["read_bytes"].sum() < app1["total_POSIX_BYTES_READ"].clip(lower=0).sum()


def test_as_of_before_every_job_is_one_line(app1, tmp_path):
    from iosight._errors import IosightError

    wh = Warehouse(tmp_path / "wh", create=True)
    path = tmp_path / "App1.parquet"
    app1.head(5).to_parquet(path)
    ingest([path], wh, workers=1)
    with pytest.raises(IosightError, match="no jobs with start times"):
        build_timeline(wh, as_of=float(app1["end_time"].min()) - 1)
    with pytest.raises(IosightError, match="as_of"):
        build_timeline(wh, as_of=float("nan"))
