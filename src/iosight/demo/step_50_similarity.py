"""Demo step: temporal job I/O similarity (Betke & Kunkel) on Darshan and synthetic jobs."""

from __future__ import annotations

TITLE = "Similarity: codings, clustering and 'find jobs like this one'"


def run(ctx) -> None:
    from iosight.similarity import (
        cluster,
        cluster_of,
        decode_bin,
        evaluate,
        find_similar,
        series_from_darshan,
    )
    from iosight.synth.monitoring import synth_monitoring
    from iosight.warehouse import Warehouse

    wh = ctx.warehouse
    if wh.has_table("jobs"):
        got = series_from_darshan(wh)
        ctx.say(f"series from the Darshan tables of {got['jobs']} real jobs (10-min segments)")
        ctx.show(got["metrics"], "which of the paper's nine metrics Darshan logs can give")
        codes = wh.sql(
            "select c.job_key, j.jobid, c.code from sim_codings c join sim_jobs j "
            "using (job_key) where c.coding = 'bin' and not c.zero order by j.jobid limit 8"
        )
        ctx.show(codes, "binary codings of real Darshan jobs (split points: quantiles)")

    n = 200 if ctx.quick else 400
    syn = Warehouse(ctx.workdir / "similarity-synthetic", create=True)
    synth_monitoring(syn, n, seed=1)
    ctx.say(f"{n} SYNTHETIC jobs from 13 known classes (5 s samples, 1-64 nodes, up to 8 h)")
    for coding, kw in (
        ("bin", {"sim": 0.5}),
        ("bin-aggzeros", {"sim": 0.5}),
        ("hex", {"sim": 0.7}),
        ("io-duration", {"algorithm": "tree", "eps": 0.3, "sample": n}),
        ("io-metric", {"algorithm": "tree", "eps": 0.1, "sample": n}),
    ):
        cluster(syn, coding, **kw)
    q = evaluate(syn)[["coding", "algorithm", "param", "n_clusters", "ari", "purity"]]
    ctx.show(q, "cluster quality on known classes (SYNTHETIC)")
    job = syn.sql(
        "select job_key from sim_jobs where label = 'read-compute-write' order by jobid limit 1"
    )["job_key"][0]
    near = find_similar(syn, job, coding="bin-aggzeros", top=5)
    info = dict(near.attrs)
    near = near.merge(syn.sql("select job_key, label from sim_jobs"), on="job_key")
    codes = sorted({int(c) for c in info["query_code"].split(":")} - {0})
    meaning = "; ".join(f"{c} = {'+'.join(decode_bin(c))}" for c in codes)
    ctx.say(
        f"find jobs like {job} (coding {info['query_code']}: {meaning}); "
        f"{info['compared']} of {info['candidates']} jobs compared exactly"
    )
    ctx.show(near, "most similar jobs (SYNTHETIC)")
    ctx.show(cluster_of(syn, job), f"Table 2: the cluster of {job} in each run (SYNTHETIC)")
