"""Warehouse round trips: imports, codings, clustering runs, search, Table 2, quality, CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from iosight._errors import IosightError
from iosight.cli import app
from iosight.similarity import (
    build_codings,
    cluster,
    cluster_of,
    evaluate,
    explore,
    find_similar,
    import_codings,
    import_monitoring,
    load_codings,
    segment_samples,
)
from iosight.synth.monitoring import (
    CLASSES,
    generate_monitoring,
    synth_categories,
    synth_monitoring,
)

CATS = synth_categories()
CSV = "coding,jobid\n0,5\n128:128:0,3\n128:128,4\n0:0:16:0:0:32,1\n0:0,2\n128:128:0:0,6\n"


@pytest.fixture
def codings_csv(tmp_path):
    p = tmp_path / "codes.csv"
    p.write_text(CSV)
    return p


def test_import_codings_orders_by_jobid_and_aggregates_zeros(warehouse, codings_csv):
    counts = import_codings(warehouse, codings_csv)
    assert counts == {"jobs": 6, "zero_jobs": 2}
    agg = load_codings(warehouse, "bin-aggzeros")
    assert agg.jobids.tolist() == [1, 2, 3, 4, 5, 6]
    assert agg.codes[0] == "0:16:0:32" and agg.codes[5] == "128:128:0"
    assert agg.zero.tolist() == [False, True, False, False, True, False]
    # idempotent: importing again replaces, never duplicates
    import_codings(warehouse, codings_csv)
    assert warehouse.sql("select count(*) n from sim_codings")["n"][0] == 12


def test_cluster_run_is_stored_and_repeatable(warehouse, codings_csv):
    import_codings(warehouse, codings_csv)
    run = cluster(warehouse, "bin-aggzeros", sim=0.6)
    assert run["n_zero"] == 2 and run["job_count"] == 6
    # 0:16:0:32 alone; 128:128:0, 128:128, 128:128:0 together (sim 2/3 >= 0.6)
    assert run["n_clusters"] == 2 and run["clusters_ge2"] == 1
    cluster(warehouse, "bin-aggzeros", sim=0.6)
    assert warehouse.sql("select count(*) n from sim_membership")["n"][0] == 4
    t2 = cluster_of(warehouse, "3")
    assert t2["cluster_size"].tolist() == [3] and t2["job_types"].tolist() == [2]
    df = explore(warehouse, "bin", [0.1, 0.99])
    assert df["n_clusters"].tolist() == [2, 4]


def test_sim_runs_written_before_the_rename_read_as_job_count(warehouse, codings_csv):
    """A warehouse written before ``n_jobs`` became ``job_count`` reads under the new name."""
    import pyarrow as pa

    old = {"run_id": "old", "coding": "bin", "algorithm": "density", "param": 0.5}
    warehouse.commit({"sim_runs": [pa.Table.from_pylist([{**old, "n_jobs": 9, "n_zero": 1}])]})
    assert warehouse.sql("select job_count from sim_runs")["job_count"].tolist() == [9]
    import_codings(warehouse, codings_csv)
    cluster(warehouse, "bin-aggzeros", sim=0.6)
    runs = warehouse.sql("select * from sim_runs order by run_id")
    assert "n_jobs" not in runs.columns
    assert runs["job_count"].tolist() == [6, 9] and runs["run_id"].tolist()[1] == "old"


def test_find_and_errors(warehouse, codings_csv):
    import_codings(warehouse, codings_csv)
    top = find_similar(warehouse, "dkrz:4", coding="bin", top=2)
    assert top["jobid"].tolist() == [3, 6]
    assert top["similarity"].tolist() == pytest.approx([2 / 3, 0.5])
    with pytest.raises(IosightError, match="zero job"):
        find_similar(warehouse, "5", coding="bin")
    with pytest.raises(IosightError, match="no job"):
        find_similar(warehouse, "999")
    with pytest.raises(IosightError, match="coding"):
        load_codings(warehouse, "octal")


def test_monitoring_import_round_trip(tmp_path, warehouse):
    raw = tmp_path / "raw.parquet"
    series, jobs = generate_monitoring(12, seed=3, samples_path=raw)
    seg = segment_samples(raw)
    merged = series.merge(seg, on=["job", "node", "fs", "metric", "segment"], how="outer")
    assert not merged.isna().any().any()
    assert np.allclose(merged["value_x"], merged["value_y"])
    got = seg.attrs["jobs"].set_index("job")[["n_segments", "n_nodes", "n_fs"]]
    want = jobs.set_index("job")[["n_segments", "n_nodes", "n_fs"]].to_numpy()
    assert (got.to_numpy() == want).all()
    counts = import_monitoring(warehouse, raw)
    assert counts["jobs"] == 12
    assert set(warehouse.sql("select distinct coding from sim_codings")["coding"]) == {
        "bin",
        "bin-aggzeros",
        "hex",
    }


def test_sparse_samples_count_missing_instants_as_zero(tmp_path):
    rows = [("j", "n", "f", "read_bytes", 0.0, 8.0), ("j", "n", "f", "md_read", 15.0, 0.0)]
    df = pd.DataFrame(rows, columns=["job", "node", "fs", "metric", "time", "value"])
    seg = segment_samples(df)  # 4 instants (0, 5, 10, 15): mean 8 / 4
    assert seg["value"].tolist() == [2.0]
    csv = tmp_path / "mon.csv"
    df.to_csv(csv, index=False)
    assert segment_samples(csv)["value"].tolist() == [2.0]
    df.drop(columns="value").to_csv(csv, index=False)
    with pytest.raises(IosightError, match="lack columns"):
        segment_samples(csv)


def test_sparse_monitoring_with_job_columns_gives_the_dense_codings(tmp_path):
    from iosight.warehouse import Warehouse

    raw = tmp_path / "raw.parquet"
    generate_monitoring(12, seed=3, samples_path=raw)
    dense = pd.read_parquet(raw)
    per_job = dense.groupby("job", observed=True).agg(
        job_start=("time", "min"),
        job_end=("time", "max"),
        n_nodes=("node", "nunique"),
        n_fs=("fs", "nunique"),
    )
    sparse = dense[dense["value"] > 0]
    codes = "select job_key, coding, code from sim_codings order by all"
    got = {}
    for name, df in {
        "dense": dense,
        "sparse": sparse,
        "sparse+jobs": sparse.merge(per_job, left_on="job", right_index=True),
    }.items():
        df.to_parquet(tmp_path / f"{name}.parquet", index=False)
        wh = Warehouse(tmp_path / name, create=True)
        import_monitoring(wh, tmp_path / f"{name}.parquet", categories=CATS)
        got[name] = (wh.sql(codes), wh.sql("select * from sim_profiles order by job_key"))
    assert got["sparse+jobs"][0].equals(got["dense"][0])
    pd.testing.assert_frame_equal(got["sparse+jobs"][1], got["dense"][1])
    assert not got["sparse"][0].equals(got["dense"][0])  # the zero samples carried span and nodes


def test_synthetic_quality_is_measured(warehouse):
    counts = synth_monitoring(warehouse, 300, seed=2)
    assert sum(counts.values()) == 300 and set(counts) <= {c.name for c in CLASSES}
    assert warehouse.sql("select bool_and(synthetic) s from sim_jobs")["s"][0]
    cluster(warehouse, "bin-aggzeros", sim=0.5)
    cluster(warehouse, "io-duration", algorithm="tree", eps=0.3, sample=200)
    q = evaluate(warehouse).set_index("run_id")
    assert set(q.index) == {"bin-aggzeros/density/0.5", "io-duration/tree/0.3"}
    assert ((q["ari"] > 0) & (q["purity"] <= 1)).all()
    with pytest.raises(IosightError):
        cluster(warehouse, "bin", algorithm="tree")


def _explored(wh, **where) -> tuple[pd.DataFrame, pd.DataFrame]:
    """explore's rows (less the time taken) and the stored memberships of its runs."""
    runs = explore(wh, "bin-aggzeros", [0.3, 0.7, 0.9], **where)
    members = wh.sql("select * from sim_membership order by run_id, job_key")
    return runs.drop(columns="seconds"), members


def test_explore_on_one_or_two_workers_or_a_dask_cluster_stores_the_same_runs(warehouse):
    """The clusterings of one explore run at once (processes, or a Dask cluster); each is
    the sequential algorithm, so the runs stored are the same whatever ran them."""
    distributed = pytest.importorskip("distributed")
    synth_monitoring(warehouse, 60, seed=2)
    one = _explored(warehouse, workers=1)
    assert one[0]["n_clusters"].is_monotonic_increasing and one[0]["n_clusters"].iloc[0] > 1
    two = _explored(warehouse, workers=2)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = _explored(warehouse, scheduler=cluster.scheduler_address)
    for other in (two, on_dask):
        pd.testing.assert_frame_equal(other[0], one[0])
        pd.testing.assert_frame_equal(other[1], one[1])


def _splits(wh):
    df = wh.sql("select metric, low, high, origin from sim_categories order by metric")
    return df.set_index("metric")


def test_explicit_quantiles_replace_the_stored_split_points(warehouse):
    synth_monitoring(warehouse, 60, seed=2)
    site = _splits(warehouse)
    assert set(site["origin"]) == {"synthetic site config"}
    codes = "select job_key, coding, code from sim_codings order by all"
    site_codes = warehouse.sql(codes)
    build_codings(warehouse)  # no split points given: the stored ones again
    assert _splits(warehouse).equals(site) and warehouse.sql(codes).equals(site_codes)
    build_codings(warehouse, quantiles=(0.5, 0.6))
    got = _splits(warehouse)
    assert set(got["origin"]) == {"quantiles 0.5/0.6"}
    rb = warehouse.sql("select value from sim_series where metric = 'read_bytes'")["value"]
    assert got.loc["read_bytes", "low"] == pytest.approx(np.quantile(rb, 0.5))
    assert got.loc["read_bytes", "high"] == pytest.approx(np.quantile(rb, 0.6))
    quantile_codes = warehouse.sql(codes)
    assert not quantile_codes.equals(site_codes) and len(quantile_codes) == len(site_codes)
    build_codings(warehouse)  # the quantile split points are now the stored ones
    assert _splits(warehouse).equals(got) and warehouse.sql(codes).equals(quantile_codes)
    for bad in [(0.5,), (0.9, 0.5), (0.5, float("nan")), ()]:
        with pytest.raises(IosightError, match="quantiles"):
            build_codings(warehouse, quantiles=bad)
    with pytest.raises(IosightError, match="not both"):
        build_codings(warehouse, categories=CATS, quantiles=(0.5, 0.6))
    assert _splits(warehouse).equals(got) and warehouse.sql(codes).equals(quantile_codes)


def test_generator_is_seeded():
    a, ja = generate_monitoring(5, seed=7)
    b, jb = generate_monitoring(5, seed=7)
    c, _ = generate_monitoring(5, seed=8)
    assert a.equals(b) and ja.equals(jb) and not a.equals(c)
    assert ja["n_nodes"].between(1, 64).all() and (ja["n_segments"] <= 48).all()


def test_cli_end_to_end(tmp_path, codings_csv):
    runner = CliRunner()
    wh = str(tmp_path / "wh")
    r = runner.invoke(app, ["similarity", "import-codings", str(codings_csv), "-w", wh])
    assert r.exit_code == 0, r.output
    assert "zero jobs: 2" in r.output
    r = runner.invoke(app, ["similarity", "explore", "-w", wh, "--sim", "0.5,0.9"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["similarity", "find", "4", "-w", wh, "--format", "csv", "-c", "bin"])
    assert r.exit_code == 0 and r.output.splitlines()[1].startswith("1,dkrz:3,3,")
    r = runner.invoke(app, ["similarity", "find", "nope", "-w", wh])
    assert r.exit_code == 1 and "no job" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["similarity", "explore", "-w", wh, "--sim", "x"])
    assert r.exit_code == 1
    r = runner.invoke(app, ["synth", "monitoring", "--jobs", "20", "-w", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output


def test_real_dkrz_codings(shared, warehouse):
    csv = shared("datasets", "dkrz_mistral_bcoding_100k", "coding_job_abs_mode_False.csv")
    counts = import_codings(warehouse, csv)
    assert counts["jobs"] == 100_000
    assert counts["zero_jobs"] / counts["jobs"] == pytest.approx(0.4435, abs=1e-4)  # paper: ~40%
    low = cluster(warehouse, "bin-aggzeros", sim=0.95)
    high = cluster(warehouse, "bin-aggzeros", sim=0.99)
    assert low["n_clusters"] < high["n_clusters"]
    assert high["clusters_ge2"] < high["n_clusters"] / 2  # barely any grouping at 0.99


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("-1:2,7\n", "0..511: '-1:2'"),
        ("1:99999999999999999999999,7\n", "0..511"),
        ("1:2,abc\n", "data row 1 has 'abc'"),
        ("0,7\n1:2,1.5\n", "data row 2 has '1.5'"),
        ("0,7\n1:2,\n3,2\n", "data row 2 has ''"),
        ("0,7\n1:2,nan\n", "data row 2 has 'nan'"),
        ("1:2,99999999999999999999\n", "jobid must be an integer"),
        ("1:2,07\n3,7\n", "duplicate jobid 7"),
        ("", "no codings"),
    ],
)
def test_bad_codings_csv_is_refused_and_nothing_stored_changes(tmp_path, warehouse, body, match):
    import_codings(warehouse, _write(tmp_path, "g.csv", CSV))
    before = warehouse.sql("select * from sim_codings order by all")
    with pytest.raises(IosightError, match=match):
        import_codings(warehouse, _write(tmp_path, "bad.csv", "coding,jobid\n" + body))
    assert warehouse.sql("select * from sim_codings order by all").equals(before)
    assert warehouse.sql("select count(*) n from sim_jobs")["n"][0] == 6


def test_codings_jobids_become_integer_keys(tmp_path, warehouse):
    import_codings(warehouse, _write(tmp_path, "c.csv", "coding,jobid\n0:16, 0012\n32,3\n"))
    jobs = warehouse.sql("select job_key, jobid from sim_jobs order by jobid")
    assert jobs["job_key"].tolist() == ["dkrz:3", "dkrz:12"]
    assert jobs["jobid"].tolist() == [3, 12]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_reimported_codings_are_one_batch_a_kill_after_it_loses_nothing(tmp_path, codings_csv):
    import os
    import signal
    import subprocess
    import sys

    from iosight.warehouse import Warehouse

    path = tmp_path / "wh"
    import_codings(Warehouse(path, create=True), codings_csv)
    codes = "select job_key, coding, code from sim_codings order by all"
    before = Warehouse(path).sql(codes)
    script = (
        "import sys; from iosight.similarity import import_codings; "
        "from iosight.warehouse import Warehouse; "
        "import_codings(Warehouse(sys.argv[1]), sys.argv[2])"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "IOSIGHT_TEST_CRASH_AT": "applied:1",
    }
    run = subprocess.run([sys.executable, "-c", script, str(path), str(codings_csv)], env=env)
    assert run.returncode == -signal.SIGKILL  # killed right after its first commit
    assert Warehouse(path).sql(codes).equals(before)


def test_a_job_imported_again_as_codings_keeps_no_old_profile(tmp_path, warehouse):
    rows = [
        (j, "n", "f", "read_bytes", float(t), 5.0)
        for j in ("dkrz:1", "dkrz:2")
        for t in range(0, 1200, 5)
    ]
    pd.DataFrame(rows, columns=["job", "node", "fs", "metric", "time", "value"]).to_csv(
        tmp_path / "mon.csv", index=False
    )
    import_monitoring(warehouse, tmp_path / "mon.csv", categories=CATS)
    profiled = "select job_key from sim_profiles order by job_key"
    assert warehouse.sql(profiled)["job_key"].tolist() == ["dkrz:1", "dkrz:2"]
    import_codings(warehouse, _write(tmp_path, "c.csv", "coding,jobid\n32:0,1\n"))
    assert warehouse.sql(profiled)["job_key"].tolist() == ["dkrz:2"]
    got = warehouse.sql("select coding, code from sim_codings where job_key = 'dkrz:1' order by 1")
    assert got.values.tolist() == [["bin", "32:0"], ["bin-aggzeros", "32:0"]]
