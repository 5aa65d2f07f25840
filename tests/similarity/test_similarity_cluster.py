"""SimplifiedDensity, ClusteringTree, quality and exact top-k search."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.similarity import (
    CodingSet,
    SimilarityIndex,
    bin_similarity,
    brute_force_top_k,
    cluster_quality,
    clustering_tree,
    hex_similarity,
    simplified_density,
)


def _naive_density(codings, sim, fn):
    """The paper's rule written plainly: first centroid with similarity >= SIM."""
    centroids, labels = [], []
    for c in codings:
        for k, cen in enumerate(centroids):
            if fn(c, codings[cen]) >= sim - 1e-9:
                labels.append(k)
                break
        else:
            labels.append(len(centroids))
            centroids.append(len(labels) - 1)
    return np.array(labels), np.array(centroids)


def _random_bin(rng, n):
    base = [rng.choice([0, 16, 32, 128, 256, 384], size=rng.integers(1, 9)) for _ in range(12)]
    out = []
    for _ in range(n):
        c = base[rng.integers(len(base))].copy()
        if rng.random() < 0.5:
            c[rng.integers(len(c))] = rng.choice([0, 1, 128, 511])
        if rng.random() < 0.3:
            c = np.append(c, 128)
        out.append(c)
    return out


def _random_hex(rng, n):
    out = []
    for _ in range(n):
        length = int(rng.integers(1, 7))
        h = np.zeros((9, length), dtype=np.int8)
        h[rng.integers(9)] = rng.integers(0, 16, length)
        if rng.random() < 0.5:
            h[rng.integers(9), rng.integers(length)] = rng.integers(1, 16)
        out.append(h)
    return out


@pytest.mark.parametrize("sim", [0.3, 0.7, 0.9])
def test_density_matches_the_plain_rule_bin(sim):
    codes = _random_bin(np.random.default_rng(3), 400)
    got = simplified_density(CodingSet.from_bin(codes), sim, every=100)
    labels, centroids = _naive_density(codes, sim, bin_similarity)
    assert (got.labels == labels).all()
    assert (got.centroids == centroids).all()
    assert got.progress == [
        (100, len(set(labels[:100]))),
        (200, len(set(labels[:200]))),
        (300, len(set(labels[:300]))),
        (400, len(centroids)),
    ]
    for i in range(0, 400, 37):
        assert got.similarity[i] == pytest.approx(
            bin_similarity(codes[i], codes[centroids[labels[i]]])
        )


@pytest.mark.parametrize("sim", [0.5, 0.9])
def test_density_matches_the_plain_rule_hex(sim):
    codes = _random_hex(np.random.default_rng(4), 150)
    cs = CodingSet.from_hex(codes)
    got = simplified_density(cs, sim)
    labels, _ = _naive_density(codes, sim, hex_similarity)
    assert (got.labels == labels).all()
    want = [hex_similarity(codes[7], c) for c in codes]
    assert np.allclose(cs.similarities_to(7, np.arange(len(codes))), want)


def test_density_clusters_rise_with_sim_and_bad_sim_is_refused():
    cs = CodingSet.from_bin(_random_bin(np.random.default_rng(5), 500))
    counts = [simplified_density(cs, s).n_clusters for s in (0.1, 0.5, 0.9, 0.99)]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    with pytest.raises(IosightError):
        simplified_density(cs, 0.0)


def test_clustering_tree_recovers_separated_groups():
    rng = np.random.default_rng(0)
    centers = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0]], dtype=float)
    truth = rng.integers(0, 3, 600)
    x = centers[truth] + rng.normal(0, 0.02, (600, 3))
    res = clustering_tree(x, 0.3, sample=200, seed=1)
    q = cluster_quality(truth, res.labels)
    assert q["ari"] > 0.99 and q["clusters"] == 3
    assert res.labels[0] == 0  # numbered by first appearance
    for eps in (0.0, float("inf"), float("nan")):
        with pytest.raises(IosightError, match="'eps' parameter must be a positive finite"):
            clustering_tree(x, eps, sample=200)


def test_quality_hand_example():
    truth = ["a", "a", "a", "b", "b", "c"]
    pred = [0, 0, 1, 1, 1, 1]
    q = cluster_quality(truth, pred)
    assert q["purity"] == pytest.approx((2 + 2) / 6)
    assert q["clusters"] == 2
    assert cluster_quality(truth, [5, 5, 5, 7, 7, 9])["ari"] == pytest.approx(1.0)
    with pytest.raises(IosightError):
        cluster_quality([1, 2], [1])


@pytest.mark.parametrize("kind", ["bin", "hex"])
def test_find_equals_brute_force_on_random_queries(kind):
    rng = np.random.default_rng(11)
    if kind == "bin":
        cs = CodingSet.from_bin(_random_bin(rng, 3000))
    else:
        cs = CodingSet.from_hex(_random_hex(rng, 2000))
    index = SimilarityIndex(cs)
    pruned = 0
    for q in rng.choice(len(cs), 15, replace=False):
        for k in (1, 7, 50):
            got = index.query(int(q), k)
            want = brute_force_top_k(cs, int(q), k)
            assert (got.index == want.index).all()
            assert np.allclose(got.similarity, want.similarity)
            pruned += got.compared < want.compared
    assert pruned > 0  # the bounds do avoid comparisons
