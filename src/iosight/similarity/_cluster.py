"""Clustering: SimplifiedDensity on codings, ClusteringTree on profiles, quality.

Betke & Kunkel (2020), §4 ("Clustering"), §5.3 and §6, read as in ``docs/methods.md`` §3.
"""

from __future__ import annotations

import time
import warnings
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._progress import Progress, ensure_progress
from iosight.similarity._similarity import CodingSet

PROGRESS_EVERY = 10_000
_EPS = 1e-9


@dataclass
class Clustering:
    """One clustering of ``n`` jobs.

    ``labels[i]`` is job ``i``'s cluster (0-based, numbered in order of
    creation); ``centroids[c]`` the job index of cluster ``c``'s centroid (-1 when
    the algorithm has none); ``similarity[i]`` job ``i``'s similarity to its
    centroid (NaN when none); ``progress`` the (jobs processed, clusters) pairs.

    ``labels``: each job's cluster; ``centroids``: each cluster's centroid job; ``similarity``:
    each job's similarity to its centroid; ``seconds``: how long the clustering took.
    """

    labels: np.ndarray
    centroids: np.ndarray
    similarity: np.ndarray
    progress: list[tuple[int, int]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def n_clusters(self) -> int:
        """The number of clusters (0 for no jobs)."""
        return int(self.labels.max()) + 1 if self.labels.size else 0

    def sizes(self) -> np.ndarray:
        """Jobs per cluster, indexed by label."""
        return np.bincount(self.labels, minlength=self.n_clusters)


def _eligible_lengths(la: int, sim: float, lengths: Sequence[int]) -> list[int]:
    """Bucket lengths ``lb`` that can reach ``sim``: ``|la - lb| <= (1 - sim) max(la, lb)``."""
    lo, hi = sim * la - _EPS, la / sim + _EPS
    return [lb for lb in lengths if lo <= lb <= hi]


def _first_match(
    codings: CodingSet,
    i: int,
    sim: float,
    parts: list[list[str]],
    active: list[int],
    limit: int,
) -> tuple[int, float]:
    """Position of the first choice in ``parts[:, :limit]`` with similarity >= sim.

    Scans in growing chunks, so jobs that join an early (large) cluster cost few
    comparisons; BIN passes rapidfuzz a ``score_cutoff`` so it can stop early.
    """
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cdist

    la = int(codings.lengths[i])
    start, chunk = 0, 32
    while start < limit:
        end = min(limit, start + chunk)
        if codings.kind == "bin":
            lb = len(parts[0][start])
            longest = max(la, lb)
            max_d = int(np.floor((1.0 - sim) * longest + _EPS))
            d = cdist(
                [codings.parts[0][i]],
                parts[0][start:end],
                scorer=Levenshtein.distance,
                score_cutoff=max_d,
                dtype=np.int32,
                workers=1,
            )[0]
            hit = int(np.argmax(d <= max_d))
            if d[hit] <= max_d:
                return start + hit, 1.0 - float(d[hit]) / longest
        else:
            lens = np.full(end - start, len(parts[0][start]), dtype=np.int64)
            s = codings.similarities(
                i, [p[start:end] for p in parts], lens, np.asarray(active[start:end])
            )
            hit = np.flatnonzero(s >= sim - _EPS)
            if hit.size:
                return start + int(hit[0]), float(s[hit[0]])
        start, chunk = end, chunk * 4
    return -1, float("nan")


def simplified_density(
    codings: CodingSet,
    sim: float,
    *,
    progress: Progress | None = None,
    every: int = PROGRESS_EVERY,
) -> Clustering:
    """SimplifiedDensity: each job joins the first cluster whose centroid is similar enough.

    Parameters
    ----------
    codings : CodingSet
        Codings in clustering order (BIN: eq. 1, HEX: eq. 2).
    sim : float
        The SIM threshold in (0, 1]: a job joins a cluster when its similarity to the
        centroid is >= SIM.
    progress : Progress, optional
        Advanced once per ``every`` jobs with the cluster count.
    every : int, default 10,000
        Record (jobs processed, clusters) after this many jobs (Fig. 3).

    Notes
    -----
    Exactly the paper's rule (§4 "SimplifiedDensity Algorithm", docs/methods.md §3), made
    fast without changing any assignment: (1) a centroid of length ``lb`` can only
    reach SIM when ``|la - lb| <= (1 - SIM) max(la, lb)`` (the edit distance is at
    least the length difference), so centroids are kept in buckets by length and
    only reachable buckets are compared; (2) a bucket is scanned in creation order
    and only up to the best cluster found so far, since the first match wins;
    (3) a coding seen before gets the same cluster again, because clusters created
    since then are newer than its first match.
    """
    check_param("sim", sim, 0 < sim <= 1, "a number in (0, 1]")
    check_param("every", every, every > 0, "a positive number of jobs")
    prog = ensure_progress(progress)
    t0 = time.perf_counter()
    n = len(codings)
    labels = np.empty(n, dtype=np.int64)
    sims = np.empty(n, dtype=np.float64)
    centroids: list[int] = []
    bucket_ids: dict[int, list[int]] = {}
    bucket_parts: dict[int, list[list[str]]] = {}
    bucket_active: dict[int, list[int]] = {}
    memo: dict[str, tuple[int, float]] = {}
    history: list[tuple[int, int]] = []
    nparts = len(codings.parts)
    prog.start(n, f"SimplifiedDensity SIM {sim:g}")
    for i in range(n):
        key = codings.key(i)
        hit = memo.get(key)
        if hit is None:
            la = int(codings.lengths[i])
            best, best_sim = len(centroids), 1.0
            for lb in _eligible_lengths(la, sim, bucket_ids):
                ids = bucket_ids[lb]
                limit = bisect_left(ids, best)
                if limit == 0:
                    continue
                pos, s = _first_match(codings, i, sim, bucket_parts[lb], bucket_active[lb], limit)
                if pos >= 0:
                    best, best_sim = ids[pos], s
            if best == len(centroids):
                centroids.append(i)
                bucket_ids.setdefault(la, []).append(best)
                parts = bucket_parts.setdefault(la, [[] for _ in range(nparts)])
                for p, src in zip(parts, codings.parts, strict=True):
                    p.append(src[i])
                bucket_active.setdefault(la, []).append(int(codings.active[i]))
            hit = (best, best_sim)
            memo[key] = hit
        labels[i], sims[i] = hit
        if (i + 1) % every == 0 or i + 1 == n:
            history.append((i + 1, len(centroids)))
            prog.advance((i + 1) - (history[-2][0] if len(history) > 1 else 0))
    prog.finish()
    return Clustering(
        labels, np.array(centroids, dtype=np.int64), sims, history, time.perf_counter() - t0
    )


def clustering_tree(
    features: np.ndarray,
    eps: float,
    *,
    sample: int = 10_000,
    seed: int = 0,
    linkage: str = "complete",
) -> Clustering:
    """ClusteringTree: agglomerative clustering of a sample, a decision tree labels the rest.

    Parameters
    ----------
    features : array (n, d)
        Job profiles; min-max scaled here (§4.1 "ML").
    eps : float
        Distance threshold of the agglomerative clustering (Euclidean).
    sample : int, default 10,000
        Jobs clustered agglomeratively (§4.1, step 1).
    seed : int, default 0
        Seed of the sample and of the tree.
    linkage : str, default "complete"
        iosight's reading: the paper names no linkage; complete linkage makes
        ``eps`` the largest distance inside a cluster of the sample.
    """
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.tree import DecisionTreeClassifier

    check_param("eps", eps, 0 < eps < np.inf, "a positive finite distance")
    check_param("sample", sample, sample >= 2, "at least 2 jobs")
    x = np.asarray(features, dtype=float)
    if x.ndim != 2 or len(x) < 2:
        raise IosightError("ClusteringTree needs a 2-d feature array of at least 2 jobs")
    t0 = time.perf_counter()
    x = MinMaxScaler().fit_transform(x)
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(len(x), size=min(sample, len(x)), replace=False))
    agg = AgglomerativeClustering(n_clusters=None, distance_threshold=eps, linkage=linkage)
    sample_labels = agg.fit_predict(x[idx])
    tree = DecisionTreeClassifier(random_state=seed).fit(x[idx], sample_labels)
    raw = tree.predict(x)
    # renumber clusters by first appearance, as SimplifiedDensity numbers them
    _, first, inv = np.unique(raw, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    labels = order[inv]
    k = int(labels.max()) + 1
    return Clustering(
        labels,
        np.full(k, -1, dtype=np.int64),
        np.full(len(x), np.nan),
        [(len(x), k)],
        time.perf_counter() - t0,
    )


def cluster_quality(truth: Sequence, labels: Sequence) -> dict[str, float]:
    """Adjusted Rand index, homogeneity, completeness and purity against known classes.

    Purity is the share of jobs that belong to their cluster's most common class.

    ``truth``: each job's known class; ``labels``: each job's cluster.
    """
    from sklearn import metrics

    t = np.asarray(truth)
    p = np.asarray(labels)
    if t.shape != p.shape or t.size == 0:
        raise IosightError("quality needs one known class per clustered job")
    _, ti = np.unique(t, return_inverse=True)
    _, pi = np.unique(p, return_inverse=True)
    cont = np.zeros((pi.max() + 1, ti.max() + 1), dtype=np.int64)
    np.add.at(cont, (pi, ti), 1)
    with warnings.catch_warnings():
        # at high SIM most clusters hold one job (§6's "small but clean clusters"), which
        # scikit-learn flags as suspicious; here it is the expected outcome
        warnings.filterwarnings("ignore", message="The number of unique classes")
        return {
            "ari": float(metrics.adjusted_rand_score(ti, pi)),
            "homogeneity": float(metrics.homogeneity_score(ti, pi)),
            "completeness": float(metrics.completeness_score(ti, pi)),
            "purity": float(cont.max(axis=1).sum() / t.size),
            "clusters": int(pi.max() + 1),
        }
