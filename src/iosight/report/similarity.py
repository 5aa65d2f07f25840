"""The similarity report: real DKRZ codings vs the paper, quality on synthetic classes.

Betke & Kunkel (2020), §6 (Fig. 3 clustering progress, Fig. 4 SIM exploration), §7
(Table 2, cluster of a chosen job) and what the paper could not do: cluster
quality on jobs whose class is known. One HTML page with embedded PNGs, and a
plain-text ``summary.txt`` of every number on it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight._progress import Progress
from iosight.report._html import fig_img, html_table, report_dir, subplots, write_page

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

PAPER_SIMS = (0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99)
PAPER_EPS = (0.03, 0.06, 0.09, 0.1, 0.2, 0.3)


def _fig3_fig4(wh: Warehouse, runs: pd.DataFrame, title: str) -> str:
    """Fig. 3 (clusters vs jobs processed, one line per SIM) and Fig. 4 (per SIM)."""
    from iosight.similarity import PAPER_NAMES

    prog = wh.sql("select * from sim_progress order by run_id, jobs")
    out = []
    for code_name, g in runs.groupby("coding", sort=True):
        coding = PAPER_NAMES.get(str(code_name), str(code_name))
        fig, (a3, a4) = subplots(1, 2, figsize=(11, 3.8))
        for r in g.sort_values("param").itertuples():
            p = prog[prog["run_id"] == r.run_id]
            a3.plot(p["jobs"], p["clusters"], marker=".", label=f"SIM {r.param:g}")
        a3.set(xlabel="jobs processed", ylabel="clusters", title=f"Fig. 3: {coding} progress")
        a3.legend(fontsize=7)
        gs = g.sort_values("param")
        clustered = gs["job_count"] - gs["n_zero"]
        a4.plot(gs["param"], gs["n_clusters"], "r.-", label="clusters")
        a4.plot(gs["param"], gs["clusters_ge2"], "g.-", label=">= 2 jobs")
        a4.plot(gs["param"], gs["clusters_ge10"], "b.-", label=">= 10 jobs")
        a4.plot(gs["param"], clustered, color="gray", label="jobs (max clusters)")
        a4.set(xlabel="SIM", ylabel="count", yscale="log", title=f"Fig. 4: {coding}")
        a4.legend(fontsize=7)
        fig.suptitle(title, fontsize=9)
        out.append(
            f"<h3>Fig. 3 (clusters vs jobs processed) and Fig. 4 (clusters per SIM): "
            f"{html.escape(str(coding))}</h3>{fig_img(fig)}"
        )
    return "\n".join(out)


def _chosen_job(wh: Warehouse, coding: str = "bin") -> str:
    """An IO-intensive job: the most non-zero segments, then the first in job order (§7)."""
    from iosight.similarity import bin_from_texts, load_codings

    loaded = load_codings(wh, coding)
    active = np.array([np.count_nonzero(c) for c in bin_from_texts(loaded.codes)])
    if not active.any():
        raise IosightError("no non-zero job to choose for Table 2")
    return str(loaded.job_keys[int(np.argmax(active))])


def _series_plot(wh: Warehouse, keys: Sequence[str], sims: Sequence[float]) -> str:
    """Each job's summed category scores per metric and segment (Fig. 5 style)."""
    from iosight.similarity import METRICS, Categories, categorize

    cat = wh.sql("select metric, low, high from sim_categories")
    categories = Categories({r.metric: (r.low, r.high) for r in cat.itertuples()})
    fig, axes = subplots(len(keys), 1, figsize=(9, 2.0 * len(keys)), squeeze=False)
    for ax, key, s in zip(axes[:, 0], keys, sims, strict=True):
        ser = wh.sql("select metric, segment, value from sim_series where job_key = ?", [key])
        n = int(wh.sql("select n_segments from sim_jobs where job_key = ?", [key])["n_segments"][0])
        grid = np.zeros((len(METRICS), n))
        if len(ser):
            mi = ser["metric"].map({m: i for i, m in enumerate(METRICS)}).to_numpy()
            np.add.at(grid, (mi, ser["segment"].to_numpy()), categorize(ser, categories))
        ax.imshow(grid, aspect="auto", cmap="Reds", interpolation="nearest")
        ax.set_yticks(range(len(METRICS)), METRICS, fontsize=6)
        label = "chosen job" if s is None else f"similarity {s:.3f}"
        ax.set_title(f"{key} ({label})", fontsize=8)
    axes[-1, 0].set_xlabel("segment (10 min); colour: category score summed over nodes and fs")
    fig.tight_layout()
    return fig_img(fig)


def _real_section(
    out: Path,
    csv: Path,
    sims: Sequence[float],
    job: str | None,
    progress: Progress | None,
    where: dict,
) -> tuple[str, list[str]]:
    from iosight.similarity import cluster_of, explore, find_similar, import_codings
    from iosight.warehouse import Warehouse

    wh = Warehouse(out / "dkrz-warehouse", create=True)
    counts = import_codings(wh, csv)
    share = counts["zero_jobs"] / counts["jobs"]
    runs = [explore(wh, c, sims, progress=progress, **where) for c in ("bin", "bin-aggzeros")]
    import pandas as pd

    runs_df = pd.concat(runs, ignore_index=True)
    chosen = job or _chosen_job(wh)
    t2 = cluster_of(wh, chosen)
    t2 = t2[np.isclose(t2["param"], 0.7)] if np.isclose(t2["param"], 0.7).any() else t2
    near = find_similar(wh, chosen, coding="bin", top=10)
    code = near.attrs["query_code"]
    lines = [
        f"[real] {csv.name}: {counts['jobs']} jobs, zero jobs {counts['zero_jobs']} "
        f"({share:.2%}; paper: about 40%)",
    ]
    for r in runs_df.itertuples():
        lines.append(
            f"[real] {r.coding} SIM {r.param:g}: clusters {r.n_clusters}, >=2 jobs "
            f"{r.clusters_ge2}, >=10 jobs {r.clusters_ge10}, {r.seconds:.1f} s"
        )
    for r in t2.itertuples():
        lines.append(
            f"[real] Table 2, job {chosen}: {r.coding} SIM {r.param:g}: cluster size "
            f"{r.cluster_size}, job types {r.job_types}"
        )
    rising = {
        c: bool(np.all(np.diff(g.sort_values("param")["n_clusters"]) >= 0))
        for c, g in runs_df.groupby("coding")
    }
    top = runs_df.loc[runs_df["param"].idxmax()]
    lines.append(
        f"[real] clusters rise with SIM: {rising}; at SIM {top['param']:g} only "
        f"{top['clusters_ge2']} of {top['n_clusters']} clusters hold >= 2 jobs"
    )
    body = f"""
<h2>1. Real data: {html.escape(csv.name)} (DKRZ Mistral, binary codings)</h2>
<p>{counts["jobs"]:,} jobs; zero jobs {counts["zero_jobs"]:,} ({share:.2%}); the paper
states "about 40%". Clustering order: jobid, ascending.</p>
{
        html_table(
            runs_df[
                [
                    "coding",
                    "param",
                    "job_count",
                    "n_zero",
                    "n_clusters",
                    "clusters_ge2",
                    "clusters_ge10",
                    "seconds",
                ]
            ]
        )
    }
<p>Paper (§6): clusters rise with SIM (here: {rising}); for BIN the number of clusters
with >= 2 jobs falls after SIM 0.7; at 0.99 BIN barely groups jobs.</p>
{_fig3_fig4(wh, runs_df, "real DKRZ codings")}
<h3>Table 2: cluster of job {html.escape(chosen)} (coding {html.escape(code)})</h3>
{html_table(t2[["run_id", "cluster", "cluster_size", "job_types"]])}
<h3>The 10 jobs most similar to it (BIN_ALL, exact search:
{near.attrs["compared"]:,} of {near.attrs["candidates"]:,} jobs compared)</h3>
{html_table(near)}
"""
    return body, lines


def _synthetic_section(
    wh: Warehouse,
    sims: Sequence[float],
    eps: Sequence[float],
    sample: int,
    job: str | None,
    progress: Progress | None,
    where: dict,
) -> tuple[str, list[str]]:

    from iosight.similarity import cluster_of, evaluate, explore, find_similar

    for coding in ("bin", "bin-aggzeros", "hex"):
        explore(wh, coding, sims, progress=progress, **where)
    for coding in ("io-metric", "io-duration"):
        explore(wh, coding, eps, algorithm="tree", sample=sample, **where)
    q = evaluate(wh)
    q = q[q["run_id"].isin(wh.sql("select run_id from sim_runs")["run_id"])]
    cols = ["coding", "algorithm", "param", "n_clusters", "ari", "homogeneity", "purity"]
    best = q.loc[q.groupby(["coding", "algorithm"])["ari"].idxmax()].sort_values(
        "ari", ascending=False
    )
    temporal = best[best["algorithm"] == "density"].iloc[0]
    profile = best[best["algorithm"] == "tree"].iloc[0]
    margin = temporal["ari"] - profile["ari"]
    verdict = (
        "clearly beats"
        if margin >= 0.1
        else "beats, but not clearly,"
        if margin > 0
        else "does NOT beat"
    )
    lines = [
        f"[synthetic] {r.coding} {r.algorithm} {r.param:g}: clusters {r.n_clusters}, "
        f"ARI {r.ari:.3f}, homogeneity {r.homogeneity:.3f}, purity {r.purity:.3f}"
        for r in q.itertuples()
    ]
    lines.append(
        f"[synthetic] best temporal: {temporal['coding']} SIM {temporal['param']:g} ARI "
        f"{temporal['ari']:.3f}; best profile: {profile['coding']} eps {profile['param']:g} "
        f"ARI {profile['ari']:.3f}; temporal {verdict} profile-based clustering"
    )
    chosen = job or _chosen_job(wh, "bin-aggzeros")
    t2 = cluster_of(wh, chosen)
    t2 = t2[np.isclose(t2["param"], 0.7) | ((t2["coding"] == "hex") & np.isclose(t2["param"], 0.9))]
    lines += [
        f"[synthetic] Table 2, job {chosen}: {r.coding} {r.algorithm} {r.param:g}: cluster "
        f"size {r.cluster_size}, job types {r.job_types}"
        for r in t2.itertuples()
    ]
    near = find_similar(wh, chosen, coding="bin-aggzeros", top=3)
    labels = wh.sql("select job_key, label from sim_jobs where label is not null")
    near = near.merge(labels, on="job_key", how="left")
    mine = labels.loc[labels["job_key"] == chosen, "label"]
    job_count = int(wh.sql("select count(*) n from sim_jobs where label is not null")["n"][0])
    body = f"""
<h2>2. Cluster quality on synthetic jobs with known classes (SYNTHETIC DATA)</h2>
<p>{job_count:,} synthetic jobs ('iosight synth monitoring'); quality measured on the non-zero
jobs of each run. ARI: adjusted Rand index; purity: share of jobs in their cluster's
majority class.</p>
<h3>Best run per coding and algorithm</h3>{html_table(best[cols])}
<p><b>The best time-series clustering ({html.escape(str(temporal["coding"]))}, SIM
{temporal["param"]:g}, ARI {temporal["ari"]:.3f}) {verdict} the best profile-based
clustering ({html.escape(str(profile["coding"]))}, eps {profile["param"]:g}, ARI
{profile["ari"]:.3f}).</b></p>
<h3>Every run</h3>{html_table(q[cols + ["clusters_ge2", "completeness", "seconds"]])}
{_fig3_fig4(wh, q[q["algorithm"] == "density"], "synthetic jobs (SYNTHETIC)")}
<h3>Table 2 on synthetic data: cluster of job {html.escape(chosen)}</h3>
{html_table(t2[["run_id", "cluster", "cluster_size", "job_types"]])}
<h3>Series of job {html.escape(chosen)} (class {html.escape(", ".join(mine))}) and its
nearest neighbours (BIN_AGGZEROS)</h3>
{html_table(near)}
{_series_plot(wh, [chosen, *near["job_key"]], [None, *near["similarity"]])}
"""
    return body, lines


def _warehouse_section(wh: Warehouse) -> tuple[str, list[str]]:
    """What the warehouse's own jobs give: their codings, time-resolved or not, and runs.

    Shown when there is neither a codings CSV nor labelled jobs, so that ``series`` on
    ingested logs always ends in a page, with the limits of its data said on it.
    """
    from iosight.similarity import time_resolved

    jobs = wh.sql(
        "select j.jobid, j.n_segments, j.metrics, b.code as bin, a.code as bin_aggzeros, "
        "b.zero from sim_jobs j "
        "left join sim_codings b on b.job_key = j.job_key and b.coding = 'bin' "
        "left join sim_codings a on a.job_key = j.job_key and a.coding = 'bin-aggzeros' "
        "order by j.jobid"
    )
    n, timed, zero = len(jobs), time_resolved(wh), int(jobs["zero"].fillna(False).sum())
    lines = [f"warehouse jobs with codings: {n}; time-resolved (DXT/HEATMAP): {timed}; "
             f"zero jobs: {zero}"]  # fmt: skip
    body = [
        "<h2>The warehouse's jobs</h2>",
        f"<p>{n} jobs have series and codings; {timed} have time-resolved I/O (DXT or "
        f"HEATMAP), the others only POSIX counters spread over open-close intervals; "
        f"{zero} are zero jobs (no segment above LowIO). With few jobs or little temporal "
        "data the clusters below say little; the paper's results need the DKRZ codings "
        "(<code>iosight data fetch dkrz-codings</code>, then <code>--codings</code>).</p>",
        html_table(jobs.head(200)),
    ]
    if wh.has_table("sim_runs"):
        runs = wh.sql("select * from sim_runs order by coding, algorithm, param")
        body += ["<h3>Stored clusterings</h3>", html_table(runs)]
        lines += [f"run {r.run_id}: {r.n_clusters} clusters" for r in runs.itertuples()]
    return "".join(body), lines


def write_report(
    source: Warehouse | None,
    out: str | Path,
    *,
    codings_csv: str | Path | None = None,
    job: str | None = None,
    sims: Sequence[float] = PAPER_SIMS,
    eps: Sequence[float] = PAPER_EPS,
    sample: int = 10_000,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """Write ``out/similarity.html`` and ``out/summary.txt``; return the HTML path.

    Section 1 (with ``codings_csv``): the real codings in their own warehouse
    ``out/dkrz-warehouse``, BIN_ALL and BIN_AGGZEROS for every SIM, compared with
    the paper. Section 2 (when ``wh`` is given and holds labelled jobs): every coding and
    algorithm on the synthetic classes, with ARI, homogeneity and purity. Without
    either, the warehouse's stored codings and clusterings. ``job`` is the chosen job
    (Table 2, series plots); ``sims`` and ``eps`` the SIM and eps values clustered,
    ``sample`` the jobs sampled for them; ``progress`` reports the clusterings.
    The clusterings run on ``workers`` local processes (0: one per core) or on the Dask
    cluster at ``scheduler`` (:func:`iosight.similarity.explore`).
    """
    wh, out = source, report_dir(out)
    sections, lines = [], []
    where = {"workers": workers, "scheduler": scheduler}
    if codings_csv is not None:
        body, ln = _real_section(out, Path(codings_csv), sims, job, progress, where)
        sections.append(body)
        lines += ln
    labelled = (
        wh is not None
        and wh.has_table("sim_jobs")
        and bool(wh.sql("select count(*) n from sim_jobs where label is not null")["n"][0])
    )
    if labelled:
        chosen = job if codings_csv is None else None
        body, ln = _synthetic_section(wh, sims, eps, sample, chosen, progress, where)
        sections.append(body)
        lines += ln
    if not sections and wh is not None and wh.has_table("sim_codings"):
        body, ln = _warehouse_section(wh)
        sections.append(body)
        lines += ln
    if not sections:
        raise IosightError(
            "nothing to report: run 'iosight similarity series', pass --codings (a DKRZ "
            "codings CSV, 'iosight data fetch dkrz-codings') or use a warehouse with "
            "synthetic jobs ('iosight synth monitoring')"
        )
    body = (
        "<h1>Temporal job I/O similarity</h1>"
        "<p>Betke &amp; Kunkel, <i>The Importance of Temporal Behavior When Classifying Job "
        "IO Patterns</i>, as iosight reads it (its docs/methods.md, §3).</p>" + "".join(sections)
    )
    path = write_page(out, "similarity", "iosight: job I/O similarity", body)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    return path
