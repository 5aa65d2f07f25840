"""Worked examples of Betke & Kunkel §3-4 and of the issue's "How we will know"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.similarity import (
    METRICS,
    Categories,
    aggregate_zeros,
    aggregate_zeros_many,
    bin_from_text,
    bin_from_texts,
    bin_similarity,
    bin_to_text,
    code_series,
    decode_bin,
    encode_bin,
    hex_from_text,
    hex_levels,
    hex_similarity,
    hex_to_text,
    is_zero_job,
    job_profiles,
    segment_samples,
)

SPLITS = Categories({m: (1.0, 10.0) for m in METRICS})


def test_bin_code_of_md_read_and_read_bytes_is_48():
    assert encode_bin(["md_read", "read_bytes"]) == 48
    assert encode_bin({"md_read": True, "read_bytes": True, "write_bytes": False}) == 48
    assert decode_bin(48) == ["md_read", "read_bytes"]


def test_codes_368_and_496_decode_to_their_metrics():
    assert decode_bin(368) == ["md_read", "read_bytes", "read_calls", "write_calls"]
    assert decode_bin(496) == ["md_read", "read_bytes", "read_calls", "write_bytes", "write_calls"]
    assert encode_bin(decode_bin(118)) == 118
    with pytest.raises(IosightError):
        decode_bin(512)


def test_hex_quantisation_boundaries():
    got = hex_levels(np.array([0.0, 0.2499, 0.25, 0.5, 1.0, 3.7499, 3.75, 4.0]))
    assert got.tolist() == [0, 0, 1, 2, 4, 14, 15, 15]
    with pytest.raises(IosightError):
        hex_levels(np.array([4.5]))


def test_zero_aggregation_collapses_runs_only():
    assert aggregate_zeros([0, 0, 5, 0, 0, 0, 3, 0]).tolist() == [0, 5, 0, 3, 0]
    assert aggregate_zeros([128, 128, 0]).tolist() == [128, 128, 0]
    assert aggregate_zeros([0, 0, 0]).tolist() == [0]


def test_zero_job_detection():
    assert is_zero_job(np.array([0, 0, 0]))
    assert not is_zero_job(np.array([0, 16, 0]))
    assert is_zero_job(np.zeros((9, 4), dtype=np.int8))


def test_bin_similarity_paper_example():
    assert bin_similarity([1, 2, 3, 4], [1, 2, 3, 4, 5]) == pytest.approx(0.8)
    # hand-made: one substitution in four segments
    assert bin_similarity([128, 0, 0, 256], [128, 0, 16, 256]) == pytest.approx(0.75)
    assert bin_similarity([6], [388]) == pytest.approx(0.0)


def test_hex_similarity_authors_example():
    a = np.array([[1, 2, 3, 4], [0, 1, 0, 0]])
    b = np.array([[1, 2, 3, 4, 5], [0, 0, 0, 0, 1]])
    assert hex_similarity(a, b) == pytest.approx(0.7)
    assert hex_similarity(b, a) == pytest.approx(0.7)
    # the same two metrics inside nine: all-zero metrics do not count
    a9, b9 = np.zeros((9, 4), dtype=int), np.zeros((9, 5), dtype=int)
    a9[5], a9[6], b9[5], b9[6] = a[0], a[1], b[0], b[1]
    assert hex_similarity(a9, b9) == pytest.approx(0.7)


def test_hex_similarity_counts_only_metrics_active_in_either_job():
    a = np.zeros((9, 4), dtype=int)
    b = np.zeros((9, 4), dtype=int)
    a[5] = [4, 4, 0, 0]
    b[5] = [4, 4, 0, 0]
    b[7] = [0, 0, 0, 8]  # one differing metric: lev 1 of 4
    assert hex_similarity(a, b) == pytest.approx(1 - 1 / (2 * 4))
    assert hex_similarity(np.zeros((9, 2)), np.zeros((9, 3))) == 1.0


def test_text_forms_round_trip():
    codes = np.array([256, 0, 6])
    assert bin_to_text(codes) == "256:0:6"
    assert bin_from_text("256:0:6").tolist() == [256, 0, 6]
    lv = np.zeros((9, 3), dtype=np.int8)
    lv[0] = [15, 1, 0]
    assert hex_to_text(lv).startswith("f10:000:")
    assert (hex_from_text(hex_to_text(lv)) == lv).all()
    for bad in ("1:x", "600", ""):
        with pytest.raises(IosightError):
            bin_from_text(bad)


def _samples(rows):
    return pd.DataFrame(rows, columns=["job", "node", "fs", "metric", "time", "value"])


def test_segmentation_partial_last_segment_is_mean_of_what_it_has():
    rows = [("j", "n0", "fs1", "read_bytes", t, 2.0) for t in range(0, 600, 5)]
    rows += [("j", "n0", "fs1", "read_bytes", 600.0, 6.0), ("j", "n0", "fs1", "read_bytes", 605, 2)]
    seg = segment_samples(_samples(rows))
    assert seg["segment"].tolist() == [0, 1]
    assert seg["value"].tolist() == pytest.approx([2.0, 4.0])
    assert seg.attrs["jobs"]["n_segments"].tolist() == [2]
    with pytest.raises(IosightError):
        segment_samples(_samples([("j", "n", "f", "bogus", 0, 1.0)]))


def test_binary_and_hex_coding_from_node_scores():
    # 2 nodes x 1 fs, 3 segments; split points low=1, high=10
    seg = pd.DataFrame(
        [
            ("j", "n0", "fs", "md_read", 0, 5.0),  # HighIO (1)
            ("j", "n1", "fs", "read_bytes", 0, 50.0),  # CriticalIO (4)
            ("j", "n0", "fs", "write_bytes", 2, 0.5),  # LowIO (0)
            ("j", "n1", "fs", "write_bytes", 2, 20.0),  # CriticalIO (4)
        ],
        columns=["job", "node", "fs", "metric", "segment", "value"],
    )
    jobs = pd.DataFrame({"job": ["j"], "n_segments": [3], "n_nodes": [2], "n_fs": [1]})
    c = code_series(seg, jobs, SPLITS)
    assert c.bin[0].tolist() == [48, 0, 128]
    h = c.hex[0]
    assert h.shape == (9, 3)
    assert h[4].tolist() == [2, 0, 0]  # md_read mean 0.5 -> level 2
    assert h[5].tolist() == [8, 0, 0]  # read_bytes mean 2.0 -> level 8
    assert h[7].tolist() == [0, 0, 8]


def test_profiles_reproduce_table1_first_row():
    # one segment, four nodes with loads 4, 1, 1, 1: coding 118, balance 7/16
    seg = pd.DataFrame(
        [
            ("j", "n0", "fs", "read_bytes", 0, 100.0),
            ("j", "n1", "fs", "read_calls", 0, 2.0),
            ("j", "n2", "fs", "md_read", 0, 2.0),
            ("j", "n3", "fs", "md_mod", 0, 2.0),
            ("j", "n3", "fs", "md_file_delete", 0, 2.0),
        ],
        columns=["job", "node", "fs", "metric", "segment", "value"],
    )
    jobs = pd.DataFrame(
        {"job": ["j", "idle"], "n_segments": [1, 2], "n_nodes": [4, 1], "n_fs": [1, 1]}
    )
    assert code_series(seg, jobs, SPLITS).bin[0].tolist() == [118]
    prof = job_profiles(seg, jobs, SPLITS).set_index("job")
    assert prof.loc["j", "io_utilization"] == 4
    assert prof.loc["j", "io_problem_time"] == 1
    assert prof.loc["j", "io_balance"] == pytest.approx(0.4375)
    assert prof.loc["j", "read_bytes_4"] == 1 and prof.loc["j", "read_bytes_0"] == 0
    assert prof.loc["j", "write_bytes_0"] == 1
    assert prof.loc["idle", ["io_balance", "io_utilization", "io_problem_time"]].sum() == 0


def test_profiles_problem_time_over_segments():
    seg = pd.DataFrame(
        [("j", "n0", "fs", "write_bytes", 1, 5.0), ("j", "n1", "fs", "write_bytes", 3, 50.0)],
        columns=["job", "node", "fs", "metric", "segment", "value"],
    )
    jobs = pd.DataFrame({"job": ["j"], "n_segments": [4], "n_nodes": [2], "n_fs": [1]})
    p = job_profiles(seg, jobs, SPLITS).iloc[0]
    assert p["io_problem_time"] == pytest.approx(0.5)
    assert p["io_utilization"] == pytest.approx(2.5)  # (1 + 4) / 2
    assert p["io_balance"] == pytest.approx(0.5)  # each segment: one of two nodes
    assert p["write_bytes_1"] == pytest.approx(0.25) and p["write_bytes_4"] == pytest.approx(0.25)


def test_categories_from_quantiles_and_config(tmp_path):
    seg = pd.DataFrame({"metric": ["read_bytes"] * 1000, "value": np.arange(1, 1001, dtype=float)})
    cat = Categories.from_quantiles(seg, (0.5, 0.9))
    lo, hi = cat.splits["read_bytes"]
    assert lo == pytest.approx(500.5) and hi == pytest.approx(900.1)
    assert cat.splits["md_mod"] == (1.0, 1.0)
    cfg = tmp_path / "cat.yaml"
    import yaml

    cfg.write_text(yaml.safe_dump(cat.to_dict()))
    assert Categories.from_config(cfg).splits["read_bytes"] == pytest.approx((lo, hi))
    cfg.write_text("read_bytes: [0, 1]\n")
    with pytest.raises(IosightError):
        Categories.from_config(cfg)
    # the mapping form reads the same; malformed files are clear errors, not tracebacks
    cfg.write_text("".join(f"{m}: {{low: {a}, high: {b}}}\n" for m, (a, b) in cat.splits.items()))
    read_back = Categories.from_config(cfg).splits
    assert read_back.keys() == cat.splits.keys()
    for metric, bounds in cat.splits.items():
        assert read_back[metric] == pytest.approx(bounds), metric
    for bad, message in (
        ("md_read: {low: 1, hi: 10}\n", "low: .., high"),
        ("md_read: [1, 10\n", "not valid YAML"),
    ):
        cfg.write_text(bad)
        with pytest.raises(IosightError, match=message):
            Categories.from_config(cfg)
    bad_json = tmp_path / "cat.json"
    bad_json.write_text("{")
    with pytest.raises(IosightError, match="not valid JSON"):
        Categories.from_config(bad_json)


def test_vectorised_forms_equal_the_scalar_ones():
    rng = np.random.default_rng(0)
    codes = [rng.choice([0, 0, 0, 16, 128], size=rng.integers(1, 12)) for _ in range(300)]
    many = aggregate_zeros_many(codes)
    assert all((a == aggregate_zeros(c)).all() for a, c in zip(many, codes, strict=True))
    texts = [bin_to_text(c) for c in codes]
    parsed = bin_from_texts(texts)
    assert all((a == c).all() for a, c in zip(parsed, codes, strict=True))
    for bad in (["1:x"], ["600"], [""]):
        with pytest.raises(IosightError):
            bin_from_texts(bad)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("-1:2", "0..511: '-1:2'"),
        ("1:99999999999999999999999", "0..511: '1:99999999999999999999999'"),
        ("1:512", "0..511"),
        ("1::2", "colon-separated integers"),
        ("1:2.5", "colon-separated integers"),
    ],
)
def test_bad_binary_codings_name_the_coding(text, match):
    for parse in (bin_from_text, lambda t: bin_from_texts(["16:0", t, "nope"])):
        with pytest.raises(IosightError, match=match):
            parse(text)


GOOD = ("j", "n", "f", "read_bytes", 0.0, 8.0)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([GOOD, ("j", "n", "f", "read_bytes", 5.0, float("nan"))], "1 of 2 values are empty, NaN"),
        ([GOOD, ("j", "n", "f", "read_bytes", 5.0, None)], "values are empty"),
        ([("j", "n", "f", "read_bytes", 5.0, float("inf"))], "infinite"),
        ([("j", "n", "f", "read_bytes", 5.0, -1.0)], "negative"),
        ([GOOD, ("j", "n", "f", "read_bytes", float("nan"), 1.0)], "1 of 2 rows lack"),
        ([GOOD, ("j", None, "f", "read_bytes", 5.0, 1.0)], "rows lack a job, node"),
        ([], "no rows"),
    ],
)
def test_samples_without_a_usable_value_or_key_are_refused(rows, match):
    with pytest.raises(IosightError, match=match):
        segment_samples(_samples(rows))


def test_non_numeric_times_and_bad_lengths_are_refused(tmp_path):
    csv = tmp_path / "mon.csv"
    head = "job,node,fs,metric,time,value\n"
    csv.write_text(head + "j,n,f,read_bytes,0,1\nj,n,f,read_bytes,soon,1\n")
    with pytest.raises(IosightError, match="time and value must be numbers"):
        segment_samples(csv)
    csv.write_text(head)
    with pytest.raises(IosightError, match="no rows"):
        segment_samples(csv)
    good = _samples([GOOD])
    for seg, iv in ((float("inf"), 5.0), (float("nan"), 5.0), (600.0, float("inf")), (0.0, 5.0)):
        with pytest.raises(IosightError, match="parameter must be"):
            segment_samples(good, seg, iv)


def _dense_two_nodes():
    """2 nodes x 20 min of 5 s samples; only node n0 is active, at 600 <= t < 700."""
    rows = [
        ("j", node, "f", "read_bytes", float(t), 4.0 if node == "n0" and 600 <= t < 700 else 0.0)
        for node in ("n0", "n1")
        for t in range(0, 1200, 5)
    ]
    return _samples(rows)


def test_sparse_samples_with_job_columns_segment_as_the_dense_ones():
    dense = _dense_two_nodes()
    want = segment_samples(dense)
    assert want.attrs["jobs"][["n_segments", "n_nodes"]].values.tolist() == [[2, 2]]
    assert want[["segment", "value"]].values.tolist() == [[1, 4.0 * 20 / 120]]
    sparse = dense[dense["value"] > 0]
    lossy = segment_samples(sparse)  # no job columns: span and nodes from the samples
    assert lossy.attrs["jobs"][["n_segments", "n_nodes"]].values.tolist() == [[1, 1]]
    assert lossy[["segment", "value"]].values.tolist() == [[0, 4.0]]
    full = sparse.assign(job_start=0.0, job_end=1195.0, n_nodes=2, n_fs=1)
    got = segment_samples(full)
    assert got.attrs["jobs"].equals(want.attrs["jobs"])
    assert got[["segment", "value"]].values.tolist() == [[1, 4.0 * 20 / 120]]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"job_start": [0.0, 5.0]}, "different job_start"),
        ({"job_start": 650.0}, "outside job_start..job_end"),
        ({"job_end": 601.0}, "at 600.0 to 605.0, outside job_start..job_end = 0.0..601.0"),
        ({"n_nodes": 1.5}, "whole numbers"),
        ({"n_fs": 0}, "at least the 1 nodes and 1 file systems"),
        ({"job_end": float("inf")}, "finite"),
        ({"n_nodes": 1e30}, "up to 1e9"),
        ({"job_end": 1e12}, "would have 1.67e\\+09 segments of 600 s"),
    ],
)
def test_job_columns_must_fit_the_samples(change, match):
    dense = _dense_two_nodes()
    two = dense[dense["value"] > 0].iloc[:2]
    rows = two.assign(job_start=0.0, job_end=1195.0, n_nodes=2, n_fs=1).assign(**change)
    with pytest.raises(IosightError, match=match):
        segment_samples(rows)
