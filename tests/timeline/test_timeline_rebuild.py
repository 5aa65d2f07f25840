"""rebuild_timeline builds again with the options the stored timeline was built with
(follow mode calls it after each batch): SYNTHETIC facility jobs."""

from __future__ import annotations

import pytest

from iosight.synth.facility import FacilityConfig, generate_facility
from iosight.timeline import build_timeline, load_timeline, rebuild_timeline
from iosight.warehouse import Warehouse


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    wh = Warehouse(tmp_path_factory.mktemp("rebuild") / "wh", create=True)
    generate_facility(wh, FacilityConfig(months=0.2, jobs_per_day=40, seed=2))
    return wh


def test_rebuild_keeps_the_stored_builds_options(wh):
    first = float(wh.sql("select min(start_time) from jobs").iloc[0, 0])
    options = {"bin_width": 600.0, "spread": "equal", "since": first + 86400.0, "span": "all"}
    build_timeline(wh, **options)
    asked = load_timeline(wh)
    build_timeline(wh)  # another table in between: the defaults differ on every option
    assert not load_timeline(wh).equals(asked)
    build_timeline(wh, **options)
    rebuild_timeline(wh)
    assert load_timeline(wh).equals(asked)


def test_rebuild_of_a_timeline_without_stored_options_keeps_its_bin_width(wh):
    table = build_timeline(wh, bin_width=900.0)
    wh.write_table("timeline", table.replace_schema_metadata({}))  # as older versions wrote
    rebuild_timeline(wh)
    assert load_timeline(wh).equals(build_timeline(wh, bin_width=900.0).to_pandas())
