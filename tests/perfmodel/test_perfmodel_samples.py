"""Runs -> samples: CLT convergence (§IV-A), CSV loading, IOR-like logs in a warehouse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.perfmodel import load_platform
from iosight.perfmodel._samples import group_runs, read_table, runs_from_warehouse, write_table
from iosight.synth.writes import WriteSimConfig, runs_to_warehouse, simulate_writes


def test_clt_convergence_by_hand():
    runs = pd.DataFrame(
        {
            "nodes": [1] * 9 + [2] * 5 + [4] * 12,
            "cores": 1,
            "size": 10,
            "write_time": [10, 10.1, 9.9, 50, 1, 1, 1, 1, 1]  # converges after 3
            + [10, 30, 1, 20, 5]  # never converges, only 5 runs
            + [10, 30, 1, 20, 5, 9, 8, 7, 6, 100, 100, 100],  # capped at 9 runs
        }
    )
    s = group_runs(runs, confidence=0.9, error=0.1).set_index("nodes")
    # mean 10, s = 0.1, z(0.95) = 1.6449: 1.6449 * 0.1 / sqrt(3) = 0.09497 <= 1.0
    assert s.loc[1, "converged"] and s.loc[1, "runs"] == 3
    assert s.loc[1, "mean_time"] == pytest.approx(10.0)
    assert s.loc[1, "halfwidth"] == pytest.approx(1.644854 * 0.1 / np.sqrt(3), rel=1e-5)
    assert not s.loc[2, "converged"] and s.loc[2, "runs"] == 5
    assert s.loc[2, "mean_time"] == pytest.approx(13.2)
    assert s.loc[4, "runs"] == 9 and s.loc[4, "mean_time"] == pytest.approx(96 / 9)
    # a looser confidence converges where 0.98 does not
    tight = pd.DataFrame({"nodes": 1, "cores": 1, "size": 1, "write_time": [10, 11, 9, 12]})
    assert group_runs(tight, confidence=0.9).converged.item()
    assert not group_runs(tight, confidence=0.98).converged.item()


def test_runs_validation(tmp_path):
    with pytest.raises(IosightError, match="missing"):
        group_runs(pd.DataFrame({"nodes": [1], "cores": [1], "size": [1]}))
    with pytest.raises(IosightError, match="positive"):
        group_runs(pd.DataFrame({"nodes": [1], "cores": [1], "size": [1], "write_time": [-1]}))
    with pytest.raises(IosightError, match="no such file"):
        read_table(tmp_path / "nope.csv")
    p = tmp_path / "runs.csv"
    p.write_text("nodes,cores,size,stripes,write_time\n2,4,1000000,2,3.0\n2,4,1000000,2,3.1\n")
    assert len(group_runs(read_table(p))) == 1


def test_simulator_is_seeded_and_labelled():
    plat = load_platform("titan")
    cfg = WriteSimConfig(scales=(1, 4), patterns_per_scale=3, seed=5)
    a, b = simulate_writes(plat, cfg), simulate_writes(plat, cfg)
    assert a.equals(b) and a["synthetic"].all() and (a["system"] == "titan (synthetic)").all()
    assert (a.groupby("pattern_id").size() <= 9).all() and (a.write_time > 0).all()
    c = simulate_writes(plat, WriteSimConfig(scales=(1, 4), patterns_per_scale=3, seed=6))
    assert not np.allclose(a.write_time[:3], c.write_time[:3])


def test_warehouse_round_trip(warehouse):
    plat = load_platform("titan")
    runs = simulate_writes(plat, WriteSimConfig(scales=(2, 3), patterns_per_scale=2, seed=1))
    runs["size"], runs["cores"] = 4096, 4  # small files keep the tables small
    n = runs_to_warehouse(warehouse, runs, plat, seed=2)
    # Darshan records ranks, not nodes: the cores per node is given
    got = runs_from_warehouse(warehouse, plat, cores_per_node=4)
    assert len(got) == n == len(runs)
    got = got.sort_values("start_time").reset_index(drop=True)
    assert np.allclose(got.write_time, runs.write_time)
    assert (got.nodes == runs.nodes).all() and (got.cores == runs.cores).all()
    assert (got.stripes == runs.stripes).all() and (got["size"] == 4096).all()
    # a shared-file job (rank -1) is not file-per-process and is skipped
    import pyarrow as pa

    warehouse.commit(
        {
            "posix": [
                pa.table(
                    {
                        "job_key": ["x"],
                        "rank": [-1],
                        "record_id": [1],
                        "POSIX_BYTES_WRITTEN": [10],
                        "POSIX_F_OPEN_START_TIMESTAMP": [0.0],
                        "POSIX_F_CLOSE_END_TIMESTAMP": [1.0],
                    }
                )
            ]
        }
    )
    assert len(runs_from_warehouse(warehouse, plat)) == n


def test_empty_warehouse_is_a_clear_error(warehouse):
    with pytest.raises(IosightError, match="jobs"):
        runs_from_warehouse(warehouse, load_platform("titan"))


def test_write_table_format_follows_the_name(tmp_path):
    df = pd.DataFrame({"nodes": [1, 2], "write_time": [0.5, 1.5]})
    for name in ("t.parquet", "t.csv", "t.csv.gz"):
        pd.testing.assert_frame_equal(read_table(write_table(df, tmp_path / name)), df)
    for name in ("t.txt", "t", "t.gz"):
        with pytest.raises(IosightError, match="must end in .parquet or .csv"):
            write_table(df, tmp_path / name)
        assert not (tmp_path / name).exists()
