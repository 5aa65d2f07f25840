import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import analyze_bursts, label_bursts
from iosight.bursts._analysis import burst_runs, deviation_histogram, run_length_table
from iosight.bursts._labels import choose_k, severity_classes


def test_hand_worked_threshold():
    # mean 2, population std 2 (values 0,0,0,0,... worked: [0,0,0,0,10] -> mean 2, std 4)
    v = np.array([0.0, 0.0, 0.0, 0.0, 10.0])
    lab = label_bursts(v, k=1.5)
    assert lab.mean == 2 and lab.std == 4 and lab.threshold == 8
    assert lab.is_burst.tolist() == [False] * 4 + [True]
    # sigma of the burst = 2; (1.5, 10] in 5 parts of 1.7: class 1
    assert lab.severity.tolist() == [0, 0, 0, 0, 1]


def test_severity_classes_edges():
    # k = 0.5: parts of 1.9 stdev -> (0.5, 2.4] = 1, (2.4, 4.3] = 2, ..., > 10 = 5
    s = severity_classes(np.array([0.5, 0.6, 2.4, 2.5, 4.4, 9.9, 10.0, 334.0]), 0.5)
    assert s.tolist() == [0, 1, 1, 2, 3, 5, 5, 5]
    assert severity_classes(np.array([11.0, 12.0, 5.0]), 12.0).tolist() == [0, 0, 0]
    assert severity_classes(np.array([13.0]), 12.0).tolist() == [5]


def test_choose_k_hits_target_fraction():
    rng = np.random.default_rng(3)
    v = rng.lognormal(0, 1.5, 10_000)
    k = choose_k(v, 0.01)
    lab = label_bursts(v, target_fraction=0.01)
    assert lab.k == pytest.approx(k)
    assert lab.is_burst.sum() == 100


def test_reference_defines_threshold():
    v = np.array([1.0, 2.0, 3.0, 100.0])
    lab = label_bursts(v, k=1.0, reference=np.array([1.0, 3.0]))
    assert lab.mean == 2 and lab.std == 1 and lab.is_burst.tolist() == [False, False, False, True]


def test_bad_input_is_clear():
    with pytest.raises(IosightError, match="constant"):
        label_bursts(np.ones(10))
    with pytest.raises(IosightError, match="NaN"):
        label_bursts(np.array([1.0, np.nan]))
    with pytest.raises(IosightError, match="target_fraction"):
        choose_k(np.arange(10.0), 1.5)


def test_runs_and_histogram():
    b = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1], bool)
    assert burst_runs(b).tolist() == [1, 2, 1, 3]
    t = run_length_table(b)
    assert t["runs"].tolist() == [2, 1, 1] and t["bursts"].tolist() == [2, 2, 3]
    v = np.array([0.0, 0.0, 0.0, 0.0, 10.0])  # sigmas -0.5 x4 and 2.0
    h = deviation_histogram(v, label_bursts(v, k=1))
    assert h["count"].sum() == 5
    assert h.loc[np.isclose(h["sigma_low"], -0.6), "count"].item() == 4
    assert h.loc[np.isclose(h["sigma_low"], 2.0), "count"].item() == 1


def test_analyze_bursts_summary():
    rng = np.random.default_rng(0)
    n = 288 * 70
    start = pd.Timestamp("2021-03-01", tz="UTC").timestamp()
    df = pd.DataFrame(
        {
            "bin_start": start + 300.0 * np.arange(n),
            "bin_width": 300.0,
            "read_bytes": rng.lognormal(20, 1, n),
            "write_bytes": rng.lognormal(20, 2, n),
            "read_ops": 1.0,
            "write_ops": 1.0,
            "read_time": 1.0,
            "write_time": 1.0,
            "active_jobs": 1,
        }
    )
    a = analyze_bursts(df, k_read=3.0)
    s = a.summary.set_index("direction")
    assert s.loc["read", "k"] == 3.0
    assert s.loc["write", "fraction"] == pytest.approx(0.01, abs=1e-3)
    assert len(a.totals["monthly"]) == 3 and len(a.totals["hourly"]) == n // 12
    assert a.runs["write"]["bursts"].sum() == s.loc["write", "bursts"]


def test_threshold_not_above_the_mean_is_refused():
    """SYNTHETIC mostly empty series (5 busy bins of 1,000): the threshold for 1% bursts
    is an empty bin, k < 0, and every bin with any I/O would be a burst; refused."""
    v = np.zeros(1000)
    v[[10, 200, 201, 600, 900]] = [5e9, 1e6, 3e7, 2e3, 8e8]
    with pytest.raises(IosightError) as err:
        label_bursts(v, name="write bytes per bin")
    msg = str(err.value)
    assert msg.startswith("write bytes per bin has no bursts to find: 995 of its 1,000 bins")
    assert "the threshold for 1% bursts is not above the mean (k = -" in msg
    assert "\n" not in msg
    for k in (0.0, -1.0):
        with pytest.raises(IosightError, match="'k' parameter must be a positive"):
            label_bursts(v, k=k)
    # 0.2% of the bins: the 3rd largest (3e7) is above the mean (5.8e6), so 2 bursts
    assert label_bursts(v, target_fraction=0.002).is_burst.sum() == 2
