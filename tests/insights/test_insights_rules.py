"""Each known problem triggers its rule with the right evidence; a clean writer triggers none."""

from __future__ import annotations

import json

import numpy as np
import pytest

from insights_workloads import SHARED_BLOCKS, KiB, MiB, random_offsets
from iosight.insights import RULES, Thresholds, compute_insights, job_insights, load_thresholds


@pytest.fixture(scope="module")
def found(traced):
    wh, keys = traced
    run = compute_insights(wh)
    assert run.evaluated == len(keys)
    df = wh.sql("select * from insights")
    return {name: df[df["job_key"] == key].set_index("code") for name, key in keys.items()}


def evidence(rows, code) -> dict:
    return json.loads(rows.loc[code, "evidence"])


def problems(rows) -> set[str]:
    return set(rows.index[rows["level"].isin(["high", "warn"])])


def test_small_writes_trigger_p06_with_counts_and_file(found):
    rows = found["small_writes"]
    ev = evidence(rows, "P06")
    assert rows.loc["P06", "level"] == "high"
    assert ev["small_writes"] == ev["writes"] == 2000
    assert "small.bin" in rows.loc["P06", "files"]
    assert rows.loc["P06", "stake_s"] > 0
    assert ev["dxt_ranks"] == "rank 0 (2000)"  # the traced segments name the rank


def test_reading_twice_triggers_p09_with_the_bytes_read_again(found):
    rows = found["reread"]
    ev = evidence(rows, "P09")
    assert rows.loc["P09", "level"] == "warn"
    assert ev["redundant_read_bytes"] == 4 * MiB  # 8 MiB read from a 4 MiB extent
    assert ev["redundant_share"] == pytest.approx(0.5)
    assert "input.bin" in rows.loc["P09", "files"]
    assert rows.loc["P09", "stake_bytes"] == 4 * MiB


def test_random_offsets_trigger_p11(found):
    rows = found["random_reads"]
    ev = evidence(rows, "P11")
    assert ev["reads"] == 4000
    assert ev["random_reads"] == ev["reads"] - ev["seq_reads"]
    offsets = random_offsets()
    # darshan counts a read sequential when it starts past the last byte of the previous one
    last_byte = np.concatenate(([0], offsets[:-1] + KiB - 1))  # 0 after the open
    assert ev["random_reads"] == (offsets <= last_byte).sum() > 1000
    assert "P12" not in rows.index  # the sequential-reads "ok" is its complement
    assert "table.bin" in rows.loc["P11", "files"]


def test_unequal_ranks_trigger_imbalance_rules(found):
    rows = found["unequal_ranks"]
    # the file ranks 0 and 1 open separately: per-rank records, 4 MiB vs 64 KiB
    ev = evidence(rows, "P21")
    assert ev["files"] == 1
    assert ev["max_minus_min_bytes"] == 4 * MiB - 64 * KiB
    assert "rank 0" in ev["ranks"] and "rank 1" in ev["ranks"] and "half.bin" in ev["ranks"]
    # the shared file (every rank): Darshan's slowest/fastest rank bytes differ
    ev = evidence(rows, "P18")
    assert ev["files"] == 1
    gaps = {abs(a - b) * 64 * KiB for a in SHARED_BLOCKS for b in SHARED_BLOCKS if a != b}
    assert ev["slowest_minus_fastest_bytes"] in gaps
    assert "shared.bin" in rows.loc["P18", "files"]


def test_stdio_heavy_triggers_s01(found):
    rows = found["stdio_heavy"]
    ev = evidence(rows, "S01")
    assert ev["stdio_bytes"] == 4 * MiB
    assert ev["stdio_share"] == pytest.approx(1.0)
    assert rows.loc["S01", "stake_bytes"] == 4 * MiB


def test_clean_writer_triggers_no_problem(found):
    rows = found["clean_writer"]
    assert problems(rows) == set()
    assert "P14" in rows.index and rows.loc["P14", "level"] == "ok"  # sequential writes


def test_each_problem_is_specific(found):
    """The problem rules fire on their workload, not on the others'."""
    expected = {"small_writes": "P06", "reread": "P09", "random_reads": "P11", "stdio_heavy": "S01"}
    for name, code in expected.items():
        others = [n for n in expected if n != name]
        assert all(code not in problems(found[o]) for o in others), code


def test_second_run_evaluates_nothing_new(traced, found):
    wh, keys = traced
    before = wh.sql("select count(*) n from insights")["n"][0]
    run = compute_insights(wh)
    assert (run.jobs, run.evaluated) == (len(keys), 0)
    assert wh.sql("select count(*) n from insights")["n"][0] == before


def test_changed_thresholds_recompute_without_duplicates(traced, found):
    wh, keys = traced
    strict = Thresholds(small_requests_absolute=5000)  # 2000 small writes no longer enough
    run = compute_insights(wh, thresholds=strict, where=f"job_key = '{keys['small_writes']}'")
    assert run.evaluated == 1
    ji = job_insights(wh, keys["small_writes"], thresholds=strict)
    assert "P06" not in set(ji.findings["code"])
    assert wh.sql("select count(*) n from insights_jobs")["n"][0] == len(keys)
    compute_insights(wh)  # back to the defaults for the other tests
    assert "P06" in set(job_insights(wh, keys["small_writes"]).findings["code"])


def test_job_insights_order_and_not_evaluated(traced, found):
    wh, keys = traced
    ji = job_insights(wh, keys["random_reads"])
    levels = list(ji.findings["level"])
    order = ["high", "warn", "info", "ok"]
    assert levels == sorted(levels, key=order.index)
    assert ji.not_evaluated.empty  # a 3.x log with records supports every rule it needs


def test_thresholds_from_yaml(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("small_requests: 0.2\nmetadata:\n  time_rank: 5\n")
    t = load_thresholds(p)
    assert (t.small_requests, t.metadata_time_rank) == (0.2, 5)
    assert t.digest() != Thresholds().digest()


@pytest.mark.parametrize(
    "text", ["small_request: 0.2\n", "small_requests: 2\n", "small_requests: x\n", "- 1\n"]
)
def test_bad_thresholds_are_one_clear_error(tmp_path, text):
    from iosight._errors import IosightError

    p = tmp_path / "t.yaml"
    p.write_text(text)
    with pytest.raises(IosightError):
        load_thresholds(p)


def test_every_drishti_code_has_a_rule():
    drishti = {f"P{i:02d}" for i in range(1, 23) if i != 20} | {f"M{i:02d}" for i in range(1, 9)}
    assert drishti | {"S01"} <= set(RULES.names())
