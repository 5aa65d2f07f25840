"""The numpy columns the rules run on write and add up as the pandas rules did: evidence
JSON character for character as ``DataFrame.to_json``, per-job sums correctly rounded."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from iosight.insights._evidence import evidence_json
from iosight.insights._table import Table, group_sum


def test_evidence_is_written_as_pandas_wrote_it():
    rng = np.random.default_rng(7)
    n = 5000
    # counts, bytes, times and shares of every magnitude a rule's evidence holds, the
    # edges of ujson's formats (1e16, 1e-15, halves at the 10th decimal) and NaN/inf
    floats = rng.random(n) * 10.0 ** rng.integers(-20, 22, n) * rng.choice([-1, 1], n)
    floats[:12] = [0.0, -0.0, np.nan, np.inf, 1e16, 1e16 + 2, 1e-15, 5e-11, 15e-11, 0.5, 1e20, 2.0]
    ints = rng.integers(-(10**12), 10**12, n)
    texts = np.array([f'/p/a b/é{i}"\\' if i % 3 else f"rank {i} (3)" for i in range(n)], object)
    cols = {"f": floats, "i": ints, "s": texts}
    want = pd.DataFrame(cols).to_json(orient="records", lines=True).splitlines()
    assert evidence_json(cols, n) == want


def test_group_sums_are_correctly_rounded_in_any_order():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 40, 3000)
    times = rng.random(3000) * 10.0 ** rng.integers(-6, 6, 3000)
    times[rng.random(3000) < 0.1] = np.nan
    got = group_sum(groups, times, 41)
    want = [math.fsum(times[(groups == g) & ~np.isnan(times)]) for g in range(41)]
    assert got.tolist() == want and got[40] == 0.0  # a group without rows sums to 0
    order = rng.permutation(3000)
    assert group_sum(groups[order], times[order], 41).tolist() == want
    counts = np.round(times * 1000)  # whole numbers: pandas' sum, exactly
    expect = pd.Series(counts).groupby(groups).sum().reindex(range(41), fill_value=0.0)
    assert group_sum(groups, counts, 41).tolist() == expect.tolist()


def test_fetched_columns_keep_missing_values():
    import duckdb

    rel = duckdb.sql("select * from (values (1, 'a', 2.5), (null, null, null)) t(n, s, x)")
    t = Table.fetch(rel)
    assert t.isnull("n").tolist() == [False, True]  # an integer with a null: NaN there
    assert t.num("n").tolist() == [1.0, 0.0] and t.num("x").tolist() == [2.5, 0.0]
    assert t["s"].tolist() == ["a", None] and t.contains("s", "a").tolist() == [True, False]
