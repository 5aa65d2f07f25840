"""TOKIO-ABC (real data): file-per-process write samples and the per-system evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.perfmodel import evaluate_tokio, tokio_samples, tokio_split

TOKIO = ("datasets", "tokio_abc_year_in_life")
MIRA = (*TOKIO, "mira-summaries_2017-02-14_2018-02-15.csv.gz")
FILES = (
    "cori-summaries_2017-02-14-2018-02-15.csv.gz",
    "edison-summaries_2017-02-14-2018-02-15.csv.gz",
    "mira-summaries_2017-02-14_2018-02-15.csv.gz",
)


def test_mira_samples(shared):
    s = tokio_samples(shared(*MIRA))
    # README: 660 file-per-process write jobs on Mira (IOR 332 + HACC-IO 328), 16384 ranks
    assert len(s) == 660 and set(s.system) == {"mira/mira-fs1"}
    assert (s.groupby("app").size().to_dict()) == {"hacc_io_write": 328, "ior": 332}
    assert (s.nprocs == 16384).all() and (s.write_time > 0).all()
    assert np.all(np.diff(s.start_time) >= 0) and not s.synthetic.any()
    # IOR writes 1 TiB in 16384 files of 64 MiB
    ior = s[s.app == "ior"]
    assert ior["size"].median() == pytest.approx(64 * 2**20)  # the CSV lost some precision
    assert ior["m*n*K"].median() == pytest.approx(2**40)


def test_mira_evaluation_is_chronological(shared):
    s = tokio_samples(shared(*MIRA))
    out = evaluate_tokio(s, "mira/mira-fs1", families=("lasso", "median"))
    acc = out.accuracy.set_index(["family", "test_set"])
    # 30% of 660 = 198 test samples, 20% of them (40) validate, 158 are reported
    assert acc.loc[("lasso", "all"), "samples"] == 158
    assert 0 <= acc.loc[("lasso", "all"), "within_30"] <= 1
    with pytest.raises(IosightError, match="systems here"):
        evaluate_tokio(s, "titan/atlas2")


@pytest.mark.parametrize("name", FILES)
def test_every_test_sample_is_later_than_every_training_sample(shared, name):
    s = tokio_samples(shared(*TOKIO, name))
    for system in s.system.unique():
        if (s.system == system).sum() < 30:
            continue
        train, test = tokio_split(s, system)
        assert len(train) > 0 and len(test) > 0
        assert set(train.system) == set(test.system) == {system}
        assert test.start_time.min() > train.start_time.max(), system
        assert len(train) + len(test) == (s.system == system).sum()
        assert len(train) / (len(train) + len(test)) == pytest.approx(0.7, abs=0.02)


def test_not_a_tokio_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(IosightError, match="not a TOKIO-ABC"):
        tokio_samples(p)


def test_real_data_report_section(shared, tmp_path):
    from iosight.perfmodel import evaluate_tokio_files
    from iosight.report.perfmodel import write_report

    acc, coefs, cmp = evaluate_tokio_files([shared(*MIRA)])
    assert set(acc.system) == {"mira/mira-fs1"} and "(intercept)" in set(
        coefs["mira/mira-fs1"].feature
    )
    page = write_report(None, tmp_path / "rep", tokio=(acc, coefs, cmp)).read_text()
    assert "mira/mira-fs1" in page
    assert (tmp_path / "rep" / "tokio_accuracy.csv").exists()


def test_choice_on_validation_prefers_the_simplest_on_ties():
    from iosight.perfmodel._online import choose_on_validation

    shares = {"paper pipeline (Lasso)": 0.9, "online median": 0.8, "iosight predictor": 0.85}
    assert choose_on_validation(shares) == "paper pipeline (Lasso)"
    shares["online median"] = 0.9
    assert choose_on_validation(shares) == "online median"


def test_deployed_method_is_chosen_without_the_test_period(shared):
    from iosight.perfmodel import CANDIDATES, DEPLOYED, deployable_comparison

    s = tokio_samples(shared(*MIRA))
    system = "mira/mira-fs1"
    cmp = deployable_comparison(s, system).query("test_set == 'all'").set_index("method")
    chosen = cmp.loc[DEPLOYED, "chosen"]
    assert chosen in CANDIDATES and (cmp["chosen"] == chosen).all()
    share = cmp.loc[DEPLOYED, "validation_within_30"]
    assert share == cmp.loc[list(CANDIDATES), "validation_within_30"].max()
    assert cmp.loc[DEPLOYED, "within_30"] == cmp.loc[chosen, "within_30"]
    # the test period's outcomes scrambled: test scores move, the choice does not
    _, test = tokio_split(s, system)
    rng = np.random.default_rng(0)
    other = s.copy()
    other.loc[test.index, "write_time"] *= rng.uniform(0.3, 3.0, len(test))
    again = deployable_comparison(other, system).query("test_set == 'all'").set_index("method")
    assert again.loc[DEPLOYED, "chosen"] == chosen
    cols = "validation_within_30"
    assert np.allclose(again.loc[list(CANDIDATES), cols], cmp.loc[list(CANDIDATES), cols])
    assert not np.allclose(again["within_30"], cmp["within_30"])  # the control


def test_server_load_with_every_counter_at_zero_is_missing(shared):
    import pandas as pd

    path = shared(*TOKIO, FILES[1])
    raw = pd.read_csv(path, low_memory=False)
    cpu = ["fs_ave_oss_cpu", "fs_ave_mds_cpu", "fs_tot_bytes_written", "fs_tot_bytes_read"]
    assert (raw[cpu] == 0).all(axis=1).sum() > 0  # the file does hold such rows
    s = tokio_samples(path)
    assert s["lag OSS CPU"].notna().mean() > 0.9
    assert not ((s["lag OSS CPU"] == 0) & (s["lag written GiB/s"] == 0)).any()


def test_design_scores_come_from_the_training_part_only(shared):
    from iosight.perfmodel import OnlineSettings, training_walk_forward

    s = tokio_samples(shared(*MIRA))
    system = "mira/mira-fs1"
    st = OnlineSettings(trees=20)
    got = training_walk_forward(s, system, st)
    train, test = tokio_split(s, system)
    assert 0.5 < got["iosight predictor"] <= 1 and 0.5 < got["online median"] <= 1
    assert got["samples"] == pytest.approx(0.7 * len(train), abs=2)
    rng = np.random.default_rng(0)
    other = s.copy()
    other.loc[test.index, "write_time"] *= rng.uniform(0.3, 3.0, len(test))
    assert training_walk_forward(other, system, st) == got
    other.loc[train.index[-40:], "write_time"] *= 3  # the control: training runs count
    assert training_walk_forward(other, system, st) != got
