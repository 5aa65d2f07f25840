"""Workload generator (004 §V-C) and the resumable, seeded experiment runner."""

import math

import numpy as np
import pandas as pd
import pytest

from iosight import IosightError
from iosight.iosched import compute_sizes, generate_workload, ost_curves, x_bound
from iosight.iosched._experiment import (
    ExperimentConfig,
    load_results,
    pairs,
    parse_loads,
    run_experiment,
)
from iosight.iosched._model import io_time, workload_io_load


@pytest.mark.parametrize("c", [0.05, 0.3, 0.75, 0.99])
def test_x_bound_solves_the_equation(c):
    b = x_bound(c)
    assert math.log1p(b) == pytest.approx(b * c, rel=1e-9)


def test_compute_sizes_shares():
    q = compute_sizes(40, 480)
    assert sorted(q.tolist(), reverse=True)[:4] == [90] * 4  # 4 large apps, 75 % of 480
    assert (q == 8).sum() == 12 and (q == 1).sum() == 24


def test_generated_workload_follows_the_protocol():
    curves = ost_curves(seed=1)
    loads = []
    for s in range(40):
        w, _ = generate_workload(curves, theta=0.6, rng=np.random.default_rng(s))
        t_io1 = io_time(w.v_io, w.bw)[:, 0]
        assert w.t_cpu + t_io1 == pytest.approx(np.full(w.k, 5000.0))
        assert w.phases.min() >= 2 and w.phases.max() <= 20
        loads.append(workload_io_load(w, np.ones(w.k, dtype=np.int64)))
    assert np.mean(loads) == pytest.approx(0.6, abs=0.03)  # I/O-load(pi_1) = Theta


def test_experiment_is_resumable_and_seeded(tmp_path):
    cfg = ExperimentConfig(dataset="ost", loads=(0.5,), sets=2, seed=3)
    assert run_experiment(cfg, tmp_path / "a") == {"run": 2, "skipped": 0}
    assert run_experiment(cfg, tmp_path / "a") == {"run": 0, "skipped": 2}
    df = load_results(tmp_path / "a")
    assert len(df) == 2 * (len(pairs()) + 3)
    assert set(df.study) == {"accurate", "robust"}
    # one set alone, in another folder, gives the same rows (seeds keyed by set)
    run_experiment(ExperimentConfig(dataset="ost", loads=(0.5,), sets=1, seed=3), tmp_path / "b")
    one = load_results(tmp_path / "b")
    same = df[df.set == 0].reset_index(drop=True)
    assert np.allclose(one.mean_slowdown, same.mean_slowdown)
    with pytest.raises(IosightError, match="another configuration"):
        run_experiment(
            ExperimentConfig(dataset="ost", loads=(0.5,), sets=2, seed=4), tmp_path / "a"
        )


def test_one_or_two_workers_or_a_dask_cluster_give_the_same_results(tmp_path):
    """Each task's streams come from its (load, set): where it ran changes no row."""
    distributed = pytest.importorskip("distributed")
    cfg = ExperimentConfig(dataset="ost", loads=(0.4, 0.8), sets=1, seed=5, k=12, n_resources=6,
                           robustness=False, mckp_zero=False)  # fmt: skip

    def results(name: str, **where) -> pd.DataFrame:
        assert run_experiment(cfg, tmp_path / name, **where) == {"run": 2, "skipped": 0}
        df = load_results(tmp_path / name)
        return df.sort_values(["theta", "set", "study", "allocator", "placement"],
                              ignore_index=True)  # fmt: skip

    one = results("one", workers=1)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = results("dask", scheduler=cluster.scheduler_address)
    for other in (results("two", workers=2), on_dask):
        pd.testing.assert_frame_equal(other, one)


def test_folders_from_before_family_curves_resume_as_cubic(tmp_path):
    import json

    from iosight.iosched import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(dataset="ost", loads=(0.3,), sets=1, robustness=False)
    assert run_experiment(cfg, tmp_path) == {"run": 1, "skipped": 0}
    meta = tmp_path / "config.json"
    old = json.loads(meta.read_text())
    del old["family_curves"]
    meta.write_text(json.dumps(old))
    cubic = ExperimentConfig(**{**cfg.__dict__, "family_curves": "cubic"})
    assert run_experiment(cubic, tmp_path) == {"run": 0, "skipped": 1}
    with pytest.raises(IosightError, match="another configuration"):
        run_experiment(cfg, tmp_path)
    with pytest.raises(IosightError, match="family_curves"):
        ExperimentConfig(family_curves="spline")


def test_forge_study_runs_mckp_zero_beside_mckp(shared, tmp_path):
    from iosight.iosched import ExperimentConfig, load_results, run_experiment

    root = shared("datasets", "bez_forge_io_forwarding_bandwidth")
    cfg = ExperimentConfig(loads=(0.5,), sets=1, robustness=False, forge_dir=str(root))
    run_experiment(cfg, tmp_path)
    df = load_results(tmp_path).set_index("allocator")
    assert df.loc["MCKP", "io_load_alloc"] != df.loc["MCKP-0", "io_load_alloc"]
    off = ExperimentConfig(**{**cfg.__dict__, "mckp_zero": False})
    run_experiment(off, tmp_path / "off")
    same = load_results(tmp_path / "off").set_index(["allocator", "placement"])
    both = df.reset_index().set_index(["allocator", "placement"]).loc[same.index]
    assert np.allclose(both.mean_slowdown, same.mean_slowdown)  # other rows unchanged


@pytest.mark.parametrize(
    "bad",
    [
        {"statistic": "best2"},
        {"grid": "fine"},
        {"k": 0},
        {"seed": -1},
        {"sets": 1.5},
        {"simulator": "exact"},
        {"dataset": "io-node"},
        {"dataset": "io-nodes", "forge_dir": "/nonexistent/forge"},
    ],
)
def test_settings_that_cannot_run_leave_the_folder_free(tmp_path, bad):
    """A typo fails before config.json is written, so the corrected run can use the folder."""
    good = {"dataset": "ost", "loads": (0.3,), "sets": 1, "robustness": False}
    with pytest.raises(IosightError):
        run_experiment(ExperimentConfig(**(good | bad)), tmp_path / "ex")
    assert not (tmp_path / "ex" / "config.json").exists()
    assert run_experiment(ExperimentConfig(**good), tmp_path / "ex") == {"run": 1, "skipped": 0}


def test_loads_past_k_over_n_are_refused_not_mislabelled():
    """Theta N / K is the mean I/O-Stress(j, 1) (§V-C): at most 1, so Theta <= K / N."""
    curves = ost_curves(seed=1)
    with pytest.raises(IosightError, match=r"at most K / N = 10/20 = 0\.5"):
        generate_workload(curves, theta=1.0, k=10, rng=np.random.default_rng(0))
    with pytest.raises(IosightError, match=r"in \(0, 1\]"):
        x_bound(1.5)
    # the bound itself is reachable: every application is pure I/O, I/O-load(pi_1) = Theta
    w, _ = generate_workload(curves, theta=0.5, k=10, rng=np.random.default_rng(0))
    assert np.all(w.t_cpu == 0)
    assert workload_io_load(w, np.ones(w.k, dtype=np.int64)) == pytest.approx(0.5)
    with pytest.raises(IosightError, match=r"loads.*at most K / N.*Got 1\.0"):
        ExperimentConfig(dataset="ost", k=10, loads=(0.5, 1.0, 1.5))
    ExperimentConfig(dataset="ost", k=30, loads=(0.1, 1.5))  # docs/iosched.md's K = 30 study


def test_parse_loads_ranges_and_lists():
    assert parse_loads("0.1:1.5:0.1") == tuple(round(0.1 * i, 3) for i in range(1, 16))
    assert parse_loads("0.1:1.55:0.1")[-1] == 1.5  # the end is included, never passed
    assert parse_loads("0.3:0.3:0.1") == (0.3,)
    assert parse_loads("0.3,1.2") == (0.3, 1.2)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("0.1:1.5:0", "step of a load range must be at least 0.001"),
        ("0.1:1.5:-0.1", "step of a load range must be at least 0.001"),
        ("0.1:0.2:0.0001", "step of a load range must be at least 0.001"),
        ("inf", "finite"),
        ("0.1:inf:0.1", "finite"),
        ("0.1,nan", "finite"),
        ("0.5:0.1:0.1", "is empty: its end is below its start"),
        ("0.1:1.5", "a:b:step"),
        ("0.001:100:0.001", "at most 10000"),
        ("0.5,0.5001", "must not repeat"),
        ("0:1:0.1", "positive"),
        ("x", "a:b:step or a,b,c"),
    ],
)
def test_parse_loads_refuses_with_the_reason(spec, expected):
    with pytest.raises(IosightError, match=expected):
        parse_loads(spec)
