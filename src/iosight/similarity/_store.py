"""The similarity tables of the warehouse, and the analyses that read and write them.

Tables (all written through :meth:`Warehouse.commit`, idempotent per key):

``sim_jobs``        job_key, jobid, n_segments, n_nodes, n_fs, metrics, source, label, synthetic
``sim_series``      job_key, node, fs, metric, segment, value (non-zero segment means)
``sim_categories``  metric, low, high, origin (split points used for the codings)
``sim_codings``     job_key, jobid, coding (bin | bin-aggzeros | hex), code, length, zero
``sim_profiles``    job_key, io_balance, io_utilization, io_problem_time, 27 IO-duration columns
``sim_runs``        run_id, coding, algorithm, param, job_count, n_zero, n_clusters,
                    clusters_ge2, clusters_ge10, seconds
``sim_clusters``    run_id, cluster, centroid_job_key, size
``sim_membership``  run_id, job_key, cluster, similarity
``sim_progress``    run_id, jobs, clusters (every 10,000 jobs, Fig. 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._progress import Progress
from iosight.similarity._cluster import Clustering, clustering_tree, simplified_density
from iosight.similarity._codings import (
    METRICS,
    Categories,
    aggregate_zeros_many,
    bin_from_texts,
    bin_to_text,
    code_series,
    hex_from_text,
    hex_to_text,
)
from iosight.similarity._profiles import IO_DURATION_COLUMNS, IO_METRIC_COLUMNS, job_profiles
from iosight.similarity._search import SimilarityIndex
from iosight.similarity._similarity import CodingSet

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from iosight.warehouse import Warehouse

DENSITY_CODINGS: tuple[str, ...] = ("bin", "bin-aggzeros", "hex")
PROFILE_CODINGS: tuple[str, ...] = ("io-metric", "io-duration")
PAPER_NAMES = {"bin": "BIN_ALL", "bin-aggzeros": "BIN_AGGZEROS", "hex": "HEX_LEV"}
_JOB_TABLES = ("sim_jobs", "sim_series", "sim_codings", "sim_profiles")  # keyed by job_key
_HINT = "run 'iosight similarity import', 'similarity series' or 'similarity import-codings'"


def _arrow(df: pd.DataFrame) -> pa.Table:
    import pyarrow as pa

    df = df.copy(deep=False)
    df.attrs = {}  # frame metadata is not table content
    return pa.Table.from_pandas(df, preserve_index=False)


# ----------------------------------------------------------------------- inputs
def store_series(
    wh: Warehouse,
    series: pd.DataFrame,
    jobs: pd.DataFrame,
    *,
    source: str,
    synthetic: bool = False,
    codings: pd.DataFrame | None = None,
) -> int:
    """Write segmented series and their jobs (``job`` becomes ``job_key``) in one
    batch, with the jobs' ``codings`` rows when given; the jobs' earlier codings and
    profiles go. Returns jobs.

    ``wh``: the warehouse written; ``series``: the segmented series (``job, node, fs, metric,
    segment, value``); ``jobs``: one row per job (``job, jobid, n_segments, ...``); ``source``:
    the jobs' ``sim_jobs.source``; ``synthetic``: whether the jobs are SYNTHETIC.
    """
    import pandas as pd

    jobs = jobs.rename(columns={"job": "job_key"}).copy()
    jobs["job_key"] = jobs["job_key"].astype(str)
    if "jobid" not in jobs:
        jobs["jobid"] = pd.array([None] * len(jobs), dtype="Int64")
    if "label" not in jobs:
        jobs["label"] = None
    jobs["label"] = jobs["label"].astype("string")
    if "metrics" not in jobs:  # the metrics the source can give
        jobs["metrics"] = ",".join(METRICS)
    jobs["source"] = source
    jobs["synthetic"] = synthetic
    cols = ["job_key", "jobid", "n_segments", "n_nodes", "n_fs", "metrics", "source", "label"]
    cols.append("synthetic")
    ser = series.rename(columns={"job": "job_key"})
    ser = ser.assign(job_key=ser["job_key"].astype(str))
    keys = jobs["job_key"].tolist()
    batch = {"sim_jobs": [_arrow(jobs[cols])], "sim_series": [_arrow(ser)]}
    if codings is not None:
        batch["sim_codings"] = [_arrow(codings)]
    wh.commit(batch, delete_keys={t: keys for t in _JOB_TABLES})
    return len(jobs)


def import_monitoring(
    wh: Warehouse,
    path: str | Path,
    *,
    segment_s: float = 600.0,
    interval_s: float = 5.0,
    categories: Categories | None = None,
) -> dict[str, int]:
    """Segment a long-format monitoring file (CSV or Parquet) into ``sim_series``, then
    build every job's codings and profiles (:func:`build_codings`).

    ``wh``: the warehouse written; ``path``: the monitoring file (``job, node, fs, metric, time,
    value`` rows); ``segment_s``: the segment length in seconds; ``interval_s``: the sampling
    interval in seconds; ``categories``: the split points (default: as :func:`build_codings`
    chooses).
    """
    from iosight.similarity._codings import segment_samples

    series = segment_samples(path, segment_s, interval_s)
    store_series(wh, series, series.attrs["jobs"], source="monitoring")
    return build_codings(wh, categories=categories)


def import_codings(wh: Warehouse, path: str | Path, *, prefix: str = "dkrz") -> dict[str, int]:
    """Read binary codings in the DKRZ format (``coding,jobid``; codes ``256:0:6``).

    Writes ``sim_jobs`` and ``sim_codings`` (``bin`` as given, ``bin-aggzeros``
    derived); the job key is ``<prefix>:<jobid>``. Returns counts.

    ``wh``: the warehouse written; ``path``: the codings CSV; ``prefix``: the job keys' prefix.
    """
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise IosightError(f"no codings file at {p}")
    try:
        df = pd.read_csv(p, dtype={"coding": str, "jobid": str}, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise IosightError(f"{p}: not a codings CSV ({err})") from None
    if not {"coding", "jobid"} <= set(df.columns):
        raise IosightError(f"{p}: need columns 'coding' and 'jobid'; got {list(df.columns)}")
    if df.empty:
        raise IosightError(f"{p}: no codings (the file has a header but no rows)")
    jobids = _jobids(df["jobid"], p)
    if jobids.duplicated().any():
        raise IosightError(f"{p}: duplicate jobid {jobids[jobids.duplicated()].iloc[0]}")
    try:
        codes = bin_from_texts(df["coding"].tolist())
    except IosightError as err:
        raise IosightError(f"{p}: {err}") from None
    keys = [f"{prefix}:{j}" for j in jobids]
    jobs = pd.DataFrame(
        {
            "job": keys,
            "jobid": jobids.astype("Int64"),
            "n_segments": [len(c) for c in codes],
            "n_nodes": pd.array([None] * len(df), dtype="Int64"),
            "n_fs": pd.array([None] * len(df), dtype="Int64"),
        }
    )
    empty = pd.DataFrame(columns=["job", "node", "fs", "metric", "segment", "value"])
    rows = _coding_rows(keys, jobids.tolist(), codes, None)
    store_series(wh, empty, jobs, source=f"codings:{p.name}", codings=rows)
    zero = int(rows.loc[rows["coding"] == "bin", "zero"].sum())
    return {"jobs": len(keys), "zero_jobs": zero}


def _jobids(texts: pd.Series, path: Path) -> pd.Series:
    """Job ids read as text, as int64; the first that is not an integer 0..2^63-1
    (empty, ``nan``, ``1.5``, ``abc``, too large) is named in the error."""
    import pandas as pd

    top = 2**63 - 1
    ids = [int(t) if t.isascii() and t.isdigit() else -1 for t in texts.str.strip()]
    bad = next((i for i, v in enumerate(ids) if not 0 <= v <= top), None)
    if bad is not None:
        raise IosightError(
            f"{path}: jobid must be an integer 0..{top}; data row {bad + 1} has {texts.iloc[bad]!r}"
        )
    return pd.Series(ids, dtype=np.int64)


def _coding_rows(keys, jobids, bins, hexes) -> pd.DataFrame:
    import pandas as pd

    frames = []
    agg = aggregate_zeros_many(bins)
    for name, seqs, text in (
        ("bin", bins, bin_to_text),
        ("bin-aggzeros", agg, bin_to_text),
        ("hex", hexes, hex_to_text),
    ):
        if seqs is None:
            continue
        frames.append(
            pd.DataFrame(
                {
                    "job_key": keys,
                    "jobid": pd.array(jobids, dtype="Int64"),
                    "coding": name,
                    "code": [text(c) for c in seqs],
                    "length": [int(c.shape[-1]) for c in seqs],
                    "zero": [not np.any(c) for c in seqs],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _categories_table(categories: Categories, origin: str) -> pa.Table:
    import pandas as pd

    cat = pd.DataFrame(
        [(m, *categories.splits[m], origin) for m in METRICS],
        columns=["metric", "low", "high", "origin"],
    )
    return _arrow(cat)


def store_categories(wh: Warehouse, categories: Categories, origin: str) -> None:
    """Keep the split points in ``sim_categories``; later codings reuse them.

    ``wh``: the warehouse written; ``categories``: the split points; ``origin``: where they came
    from (a file, quantiles, a generator).
    """
    wh.write_table("sim_categories", _categories_table(categories, origin))


def build_codings(
    wh: Warehouse,
    *,
    categories: Categories | None = None,
    quantiles: tuple[float, float] | None = None,
) -> dict[str, int]:
    """Codings and profiles of every job that has a series (§3-4).

    Split points: ``categories`` when given, else ``quantiles`` of the warehouse's
    series when given, else those stored in ``sim_categories`` (e.g. by the
    synthetic generator), else the 99% / 99.9% quantiles. The split points used
    replace the stored ones. Returns counts.

    ``wh``: the warehouse holding ``sim_series``; the codings are written there.
    """
    if categories is not None and quantiles is not None:
        raise IosightError("give split points or quantiles, not both")
    if quantiles is not None:
        ok = len(quantiles) == 2 and 0 < quantiles[0] <= quantiles[1] < 1
        check_param("quantiles", quantiles, ok, "two levels 0 < q1 <= q2 < 1")
    wh.require("sim_jobs", _HINT)
    jobs = wh.sql(
        "select job_key as job, jobid, n_segments, n_nodes, n_fs from sim_jobs "
        "where n_nodes is not null order by jobid nulls last, job_key"
    )
    if jobs.empty:
        raise IosightError(f"no jobs with time series in the warehouse; {_HINT}")
    # categorical strings: tens of millions of rows stay small
    series = wh.arrow(
        "select job_key as job, node, fs, metric, segment, value from sim_series"
        if wh.has_table("sim_series")
        else "select '' job, '' node, '' fs, '' metric, 0 segment, 0.0 value where false"
    ).to_pandas(strings_to_categorical=True)
    origin = "given"
    if categories is None and quantiles is None and wh.has_table("sim_categories"):
        stored = wh.sql("select metric, low, high, origin from sim_categories")
        categories = Categories({r.metric: (r.low, r.high) for r in stored.itertuples()})
        origin = str(stored["origin"].iloc[0])
    if categories is None:
        quantiles = quantiles or (0.99, 0.999)
        categories = Categories.from_quantiles(series, quantiles)
        origin = f"quantiles {quantiles[0]:g}/{quantiles[1]:g}"
    series = series[series["job"].isin(set(jobs["job"]))]
    series = series.assign(metric=series["metric"].astype(str).astype("category"))
    codings = code_series(series, jobs, categories)
    keys = jobs["job"].tolist()
    rows = _coding_rows(keys, jobs["jobid"].tolist(), codings.bin, codings.hex)
    prof = job_profiles(series, jobs, categories).rename(columns={"job": "job_key"})
    wh.commit(  # one batch: the codings and the split points they were made with
        {
            "sim_codings": [_arrow(rows)],
            "sim_profiles": [_arrow(prof)],
            "sim_categories": [_categories_table(categories, origin)],
        },
        delete_keys={"sim_codings": keys, "sim_profiles": keys},
        replace_tables=["sim_categories"],
    )
    by = rows.groupby("coding")["zero"].sum()
    return {
        "jobs": len(keys),
        "zero_bin": int(by.get("bin", 0)),
        "zero_hex": int(by.get("hex", 0)),
    }


# ----------------------------------------------------------------------- loading
@dataclass
class LoadedCodings:
    """Codings of one kind in clustering order (jobid, then job key).

    ``coding``: the kind of coding (``bin``, ``bin-aggzeros``, ``hex``); ``job_keys``: the jobs'
    keys; ``jobids``: their job ids; ``codes``: their codings as text; ``zero``: True for a zero
    job (no segment above LowIO).
    """

    coding: str
    job_keys: np.ndarray
    jobids: np.ndarray
    codes: list[str]
    zero: np.ndarray

    def coding_set(self) -> CodingSet:
        """The non-zero jobs' codings, ready for clustering and search."""
        sel = np.flatnonzero(~self.zero)
        if self.coding == "hex":
            return CodingSet.from_hex([hex_from_text(self.codes[i]) for i in sel])
        return CodingSet.from_bin(bin_from_texts([self.codes[i] for i in sel]))


def load_codings(wh: Warehouse, coding: str, *, source: str | None = None) -> LoadedCodings:
    """Every job's coding of one kind, in clustering order (jobid, then job key); only
    the jobs of one ``source`` (``sim_jobs.source``) when given.

    ``wh``: the warehouse holding the codings; ``coding``: the kind of coding loaded.
    """
    if coding not in DENSITY_CODINGS:
        raise IosightError(
            f"the 'coding' parameter must be one of {', '.join(DENSITY_CODINGS)}. "
            f"Got {coding!r} instead."
        )
    wh.require("sim_codings", _HINT)
    query, params = "select job_key, jobid, code, zero from sim_codings where coding = ?", [coding]
    if source is not None:
        query += " and job_key in (select job_key from sim_jobs where source = ?)"
        params.append(source)
    df = wh.sql(f"{query} order by jobid nulls last, job_key", params)
    if df.empty:
        hint = "run 'iosight similarity codings'" if coding == "hex" else _HINT
        raise IosightError(f"no {coding!r} codings in the warehouse; {hint}")
    return LoadedCodings(
        coding,
        df["job_key"].to_numpy(dtype=object),
        df["jobid"].to_numpy(dtype=object),
        df["code"].tolist(),
        df["zero"].to_numpy(dtype=bool),
    )


def _load_profiles(wh: Warehouse, coding: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    wh.require("sim_profiles", "run 'iosight similarity codings' on jobs with time series")
    cols = IO_METRIC_COLUMNS if coding == "io-metric" else IO_DURATION_COLUMNS
    if coding == "io-duration":  # metric_0 = 1 - metric_1 - metric_4: 18 independent columns
        cols = tuple(c for c in cols if not c.endswith("_0"))
    sel = ", ".join(f'p."{c}"' for c in cols)
    df = wh.sql(
        f"select p.job_key, j.jobid, p.io_problem_time, {sel} from sim_profiles p "
        "join sim_jobs j using (job_key) order by j.jobid nulls last, p.job_key"
    )
    x = df[list(cols)].to_numpy(dtype=float)
    return df["job_key"].to_numpy(dtype=object), df["io_problem_time"].to_numpy() == 0, x


# ----------------------------------------------------------------------- clustering
def run_id(coding: str, algorithm: str, param: float) -> str:
    """The id of a clustering run: coding, algorithm and parameter.

    ``coding``: the coding clustered; ``algorithm``: ``density`` or ``tree``; ``param``: its SIM
    or eps value.
    """
    return f"{coding}/{algorithm}/{param:g}"


def cluster(
    wh: Warehouse,
    coding: str,
    *,
    algorithm: str = "density",
    sim: float = 0.7,
    eps: float = 0.1,
    sample: int = 10_000,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict:
    """Cluster the warehouse's non-zero jobs and store the result (§4, §6).

    ``algorithm="density"`` runs SimplifiedDensity on ``bin``, ``bin-aggzeros`` or
    ``hex`` codings with threshold ``sim``; ``algorithm="tree"`` runs ClusteringTree
    with Euclidean distance threshold ``eps`` on the ``io-metric`` or
    ``io-duration`` profiles. Zero jobs are counted and set aside (§5.1). Returns
    the ``sim_runs`` row. One run is sequential by nature (a job joins the first
    similar cluster), so it runs here; :func:`explore` runs several at once.

    ``wh``: the warehouse holding the codings; the run is stored there; ``coding``: the coding
    or profile clustered; ``sample``: at most this many jobs, sampled, when there are more;
    ``seed``: the sample's random seed; ``progress``: told of the jobs clustered (default:
    silent).
    """
    keys, zero, data = _cluster_input(wh, coding, algorithm)
    param = sim if algorithm == "density" else eps
    result = _clustering(data, algorithm, param, sample=sample, seed=seed, progress=progress)
    return _stored_run(wh, coding, algorithm, param, keys, zero, result)


def _cluster_input(wh: Warehouse, coding: str, algorithm: str):
    """(job keys, zero-job mask, what the algorithm clusters) of the warehouse's jobs."""
    if algorithm == "density":
        loaded = load_codings(wh, coding)
        return loaded.job_keys, loaded.zero, loaded.coding_set()
    if algorithm == "tree":
        if coding not in PROFILE_CODINGS:
            raise IosightError(
                f"ClusteringTree works on profiles: coding must be one of "
                f"{', '.join(PROFILE_CODINGS)}. Got {coding!r} instead."
            )
        keys, zero, x = _load_profiles(wh, coding)
        if (~zero).sum() < 2:
            raise IosightError("fewer than 2 non-zero jobs to cluster")
        return keys, zero, x[~zero]
    raise IosightError(
        f"the 'algorithm' parameter must be density or tree. Got {algorithm!r} instead."
    )


def _clustering(
    data, algorithm: str, param: float, *, sample: int = 10_000, seed: int = 0, progress=None
) -> Clustering:
    """SimplifiedDensity of codings ``data`` at SIM ``param``, or ClusteringTree of
    profiles ``data`` at eps ``param``."""
    if algorithm == "density":
        return simplified_density(data, param, progress=progress)
    return clustering_tree(data, param, sample=sample, seed=seed)


def _stored_run(
    wh: Warehouse, coding: str, algorithm: str, param: float, keys, zero, result: Clustering
) -> dict:
    """Store one clustering (its ``sim_runs`` row, clusters, members, progress); the row."""
    members = keys[~zero]
    sizes = result.sizes()
    run = {
        "run_id": run_id(coding, algorithm, param),
        "coding": coding,
        "algorithm": algorithm,
        "param": float(param),
        "job_count": int(len(keys)),
        "n_zero": int(zero.sum()),
        "n_clusters": int(result.n_clusters),
        "clusters_ge2": int((sizes >= 2).sum()),
        "clusters_ge10": int((sizes >= 10).sum()),
        "seconds": float(result.seconds),
    }
    _store_run(wh, run, members, result)
    return run


def _store_run(wh: Warehouse, run: dict, members: np.ndarray, result: Clustering) -> None:
    import pandas as pd

    rid = run["run_id"]
    cen = result.centroids
    clusters = pd.DataFrame(
        {
            "run_id": rid,
            "cluster": np.arange(result.n_clusters, dtype=np.int64),
            "centroid_job_key": [members[c] if c >= 0 else None for c in cen],
            "size": result.sizes(),
        }
    )
    clusters["centroid_job_key"] = clusters["centroid_job_key"].astype("string")
    membership = pd.DataFrame(
        {
            "run_id": rid,
            "job_key": members.astype(str),
            "cluster": result.labels,
            "similarity": result.similarity,
        }
    )
    prog = pd.DataFrame(result.progress, columns=["jobs", "clusters"]).assign(run_id=rid)
    tables = ("sim_runs", "sim_clusters", "sim_membership", "sim_progress")
    wh.commit(
        {
            "sim_runs": [_arrow(pd.DataFrame([run]))],
            "sim_clusters": [_arrow(clusters)],
            "sim_membership": [_arrow(membership)],
            "sim_progress": [_arrow(prog[["run_id", "jobs", "clusters"]])],
        },
        delete_keys={t: [rid] for t in tables},
        key_column="run_id",
    )


def explore(
    wh: Warehouse,
    coding: str,
    values: Sequence[float],
    *,
    algorithm: str = "density",
    sample: int = 10_000,
    seed: int = 0,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """One clustering per SIM (or eps) value: the numbers behind Fig. 4.

    The clusterings run on ``workers`` local processes (0: one per core) or on the
    Dask cluster at ``scheduler`` (:func:`iosight.parallel.map_items`), each as
    :func:`cluster` would run it, and are stored here in the order of ``values``;
    ``progress`` advances as each clustering ends. Returns their ``sim_runs`` rows.

    ``wh``: the warehouse holding the codings; the runs are stored there; ``coding``: the coding
    or profile clustered; ``values``: the SIM values (``density``) or eps values (``tree``);
    ``algorithm``: ``density`` or ``tree``; ``progress``: told of each clustering (default:
    silent); ``sample`` and ``seed``: as :func:`cluster`'s.
    """
    from functools import partial

    import pandas as pd

    from iosight._progress import ensure_progress
    from iosight.parallel import check_workers, map_items

    if not values:
        raise IosightError("give at least one SIM value")
    check_workers(workers)
    keys, zero, data = _cluster_input(wh, coding, algorithm)
    prog = ensure_progress(progress)
    prog.start(len(values), f"{coding} clusterings ({algorithm})")
    run = partial(_clustering, data, algorithm, sample=sample, seed=seed)
    results = map_items(run, values, workers=workers, scheduler=scheduler,
                        on_done=lambda *_: prog.advance(1))  # fmt: skip
    prog.finish()
    rows = [_stored_run(wh, coding, algorithm, v, keys, zero, r)
            for v, r in zip(values, results, strict=True)]  # fmt: skip
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------- questions
def find_similar(wh: Warehouse, job: str, *, coding: str = "bin-aggzeros", top: int = 20):
    """The ``top`` jobs most similar to ``job`` (exact; §7), best first, among the jobs
    of its own source (``sim_jobs.source``: one codings file, Darshan logs, monitoring,
    synthetic jobs): each source has its own segments and categories, so equal codes
    from two sources mean nothing alike.

    Returns a DataFrame ``rank, job_key, jobid, similarity, code`` and the number of
    exact comparisons the index needed (in ``attrs["compared"]``). Jobs with similarity
    0 share no I/O phase with ``job`` and are left out (counted in ``attrs["unrelated"]``).

    ``wh``: the warehouse holding the codings; ``coding``: the coding compared.
    """
    import pandas as pd

    from iosight.warehouse import find_job

    check_param("top", top, top >= 1, "a positive number of jobs")
    key = find_job(wh, job, table="sim_jobs", hint=_HINT)
    source = str(wh.sql("select source from sim_jobs where job_key = ?", [key]).iat[0, 0])
    loaded = load_codings(wh, coding, source=source)
    pos = np.flatnonzero(loaded.job_keys == key)
    if pos.size == 0:
        raise IosightError(f"job {key!r} has no {coding!r} coding")
    if loaded.zero[pos[0]]:
        raise IosightError(
            f"job {key!r} is a zero job (no segment above LowIO); all "
            f"{int(loaded.zero.sum())} zero jobs are alike and set aside"
        )
    live = np.flatnonzero(~loaded.zero)
    res = SimilarityIndex(loaded.coding_set()).query(int(np.searchsorted(live, pos[0])), top)
    picked = live[res.index]
    out = pd.DataFrame(
        {
            "rank": np.arange(1, len(picked) + 1),
            "job_key": loaded.job_keys[picked],
            "jobid": loaded.jobids[picked],
            "similarity": res.similarity,
            "code": [loaded.codes[i] for i in picked],
        }
    )
    unrelated = int((out["similarity"] <= 0).sum())  # no shared I/O phase: not "similar"
    out = out[out["similarity"] > 0].reset_index(drop=True)
    out.attrs.update(
        compared=res.compared,
        candidates=len(live) - 1,
        query_code=loaded.codes[pos[0]],
        unrelated=unrelated,
        source=source,
    )
    return out


def cluster_of(wh: Warehouse, job: str, runs: Sequence[str] | None = None) -> pd.DataFrame:
    """Table 2: for each run, the chosen job's cluster size and number of job types.

    A job type is a distinct coding (``Coding with 100% similarity are of the same
    job phenotype``, §6).

    ``wh``: the warehouse holding the stored clusterings; ``job``: the chosen job: its job id,
    job key or a key prefix; ``runs``: the run ids shown (default: every stored run).
    """
    from iosight.warehouse import find_job

    key = find_job(wh, job, table="sim_jobs", hint=_HINT)
    wh.require("sim_membership", "run 'iosight similarity cluster' first")
    df = wh.sql(
        """with mine as (select run_id, cluster from sim_membership where job_key = ?)
        select r.run_id, r.coding, r.algorithm, r.param, m.cluster,
               count(*) as cluster_size, count(distinct c.code) as job_types
        from sim_membership s join mine m on s.run_id = m.run_id and s.cluster = m.cluster
        join sim_runs r on r.run_id = s.run_id
        left join sim_codings c on c.job_key = s.job_key
             and c.coding = case when r.algorithm = 'tree' then 'bin' else r.coding end
        group by all order by r.coding, r.algorithm, r.param""",
        [key],
    )
    if runs:
        df = df[df["run_id"].isin(runs)]
    if df.empty:
        raise IosightError(f"job {key!r} is in no stored clustering (zero job, or none run)")
    return df.reset_index(drop=True)


def evaluate(wh: Warehouse) -> pd.DataFrame:
    """Cluster quality of every stored run against the known classes (``sim_jobs.label``).

    ``wh``: the warehouse holding the stored runs and labelled jobs.
    """
    import pandas as pd

    from iosight.similarity._cluster import cluster_quality

    wh.require("sim_membership", "run 'iosight similarity cluster' first")
    df = wh.sql(
        "select m.run_id, m.cluster, j.label from sim_membership m "
        "join sim_jobs j using (job_key) where j.label is not null"
    )
    if df.empty:
        raise IosightError("no clustered job has a known class (only synthetic data has them)")
    runs = wh.sql("select * from sim_runs")
    rows = []
    for rid, g in df.groupby("run_id", sort=True):
        rows.append({"run_id": rid, "jobs": len(g), **cluster_quality(g["label"], g["cluster"])})
    return runs.merge(pd.DataFrame(rows), on="run_id").sort_values(
        ["algorithm", "coding", "param"], ignore_index=True
    )
