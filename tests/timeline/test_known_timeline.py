"""``known_timeline``: the timeline of the jobs known at a time, computed and not stored
(what the live timeline adds the stream to). Real logs: PyDarshan's examples."""

from __future__ import annotations

import pytest

from iosight.timeline import build_timeline, known_timeline, load_timeline
from iosight.warehouse import Warehouse, ingest
from tests_support import assert_same_timeline


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Warehouse:
    from darshan.log_utils import get_log_path

    wh = Warehouse(tmp_path_factory.mktemp("known") / "wh", create=True)
    logs = ["ior_hdf5_example.darshan", "dxt.darshan", "sample-badost.darshan"]
    ingest([get_log_path(n) for n in logs], wh, workers=1)
    return wh


def test_it_equals_the_built_timeline_as_of_the_same_time_and_stores_nothing(wh):
    stored = build_timeline(wh, bin_width=3600.0, span="all").to_pandas()
    t = float(wh.jobs()["known_at"].median())
    got = known_timeline(wh, as_of=t, bin_width=3600.0).to_pandas()
    assert_same_timeline(load_timeline(wh), stored)  # untouched by known_timeline
    want = build_timeline(wh, bin_width=3600.0, span="all", as_of=t).to_pandas()
    assert_same_timeline(got, want)
    assert 0 < got["write_bytes"].sum() < stored["write_bytes"].sum()
    assert known_timeline(wh, as_of=float(wh.jobs()["known_at"].min()) - 1) is None


def test_it_needs_a_finite_time(wh):
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="as_of"):
        known_timeline(wh, as_of=float("inf"))
