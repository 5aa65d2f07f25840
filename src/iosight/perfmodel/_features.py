"""Write-path features of Tables I (GPFS) and II (Lustre).

A write pattern (``n`` nodes x ``m`` cores, one file of ``K`` bytes per core, Lustre stripe
count ``W``) and a placement of its nodes give, per stage of the write path, the aggregate
load, the load skew (largest load on one component) and the resources in use; each enters
the model as ``x`` and ``1/x``. Adjacent stages add cross-stage products and three
features stand for interference: ``n``, ``1/(mnK)``, ``n/(mnK)``.

References
----------
.. [1] Xie et al., "Applying Machine Learning to Understand Write Performance of
   Large-scale Parallel Filesystems", §III-A, Tables I and II.

Notes
-----
iosight's readings (see docs/perfmodel.md, "Feature counts"):

- Lustre: the data stages share one aggregate-load pair ``mnK, 1/(mnK)`` (Table II's merged
  cell); compute node adds ``mK, 1/(mK), K, 1/K`` (skew) and ``m, 1/m, n, 1/n``
  (resources); 24 stage features + 3 cross-stage + 3 interference = 30, as in the paper.
- Lustre skews ``s_oss``/``s_ost`` are bytes on the busiest OSS/OST, from the striping
  policy (stripe ``j`` of a file on OST ``(start + j mod W) mod N``) and ``OST i -> OSS i mod
  #OSS``; with the ``sequence`` policy file ``f`` starts at ``(first + f W) mod N``.
- GPFS: Table I as printed lists 36 distinct stage features (``n_io, 1/n_io`` appears under
  both the metadata and I/O-node stages and is kept once), not the 34 of the text; with 4
  cross-stage and 3 interference features that makes 43, not 41.
- Cross-stage products: the adjacent pairs of Table V, i.e. Lustre ``(mK)(s_r mK)``,
  ``(s_r mK) n_oss``, ``s_oss s_ost``; GPFS ``(mK)(s_b mK)``, ``(s_b mK)(s_l mK)``,
  ``(s_l mK)(s_io mK)``, ``(s_b mK) n_nsds``.
- GPFS subblocks per file ``p_sub = ceil((K mod B) / (B / 32))`` (0 for whole blocks);
  NSDs per file ``n_d = min(ceil(K / B), #NSD)``, servers ``n_s = min(n_d, #servers)``;
  ``n_nsd = mn n_d`` and ``n_nsds = mn n_s`` as §III-A2 estimates them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, check_seed
from iosight.perfmodel._platform import Platform

if TYPE_CHECKING:
    import pandas as pd

PLACEMENTS = ("block", "random")


@dataclass(frozen=True)
class WritePattern:
    """A file-per-process write: ``nodes`` x ``cores`` files of ``size`` bytes (§II-A).

    ``stripes`` (Lustre stripe count ``W``) defaults to the platform's, also when 0 (as
    ``lfs setstripe -c 0``); ``start_target``
    overrides the platform's starting-OST policy; ``first_target`` is where a sequence starts.
    """

    nodes: int
    cores: int
    size: int
    stripes: int | None = None
    start_target: str | None = None
    first_target: int = 0

    def check(self, platform: Platform) -> None:
        """Raise :class:`IosightError` when the pattern does not fit the platform.

        ``platform``: the platform the pattern runs on.
        """
        check_param(
            "nodes",
            self.nodes,
            1 <= self.nodes <= platform.nodes,
            f"between 1 and the platform's {platform.nodes} nodes",
        )
        check_param(
            "cores",
            self.cores,
            1 <= self.cores <= platform.cores_per_node,
            f"between 1 and the platform's {platform.cores_per_node} cores per node",
        )
        check_param("size", self.size, self.size >= 1, "a positive number of bytes")
        if platform.filesystem == "lustre":
            w = self.stripes or platform.storage.default_stripe_count
            check_param(
                "stripes",
                w,
                1 <= w <= platform.storage.targets,
                f"between 1 and the {platform.storage.targets} OSTs",
            )
            pol = self.start_target or platform.storage.start_target
            check_param(
                "start_target", pol, pol in ("sequence", "random"), "'sequence' or 'random'"
            )
        elif self.stripes:
            raise IosightError("a stripe count applies to Lustre only; GPFS stripes by block")


@dataclass(frozen=True)
class FeatureSpec:
    """One model feature: its name, stage and performance-related parameter (Tables I, II).

    ``name``: the feature's column name; ``stage``: the write-path stage it describes;
    ``parameter``: the performance-related parameter it measures; ``fn``: computes it from the
    pattern's per-component loads.
    """

    name: str
    stage: str
    parameter: str
    fn: Callable[[dict[str, np.ndarray]], np.ndarray]


def _inv(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return np.divide(1.0, x, out=np.zeros_like(x), where=x != 0)


def _pair(name: str, stage: str, parameter: str, fn) -> list[FeatureSpec]:
    """``x`` and ``1/x`` for one quantity (each parameter gives two features, §III-A1)."""
    inv = f"1/{name}" if name.isidentifier() else f"1/({name})"
    return [
        FeatureSpec(name, stage, parameter, fn),
        FeatureSpec(inv, stage, parameter, lambda q, fn=fn: _inv(fn(q))),
    ]


def _common_compute(load_stage: str) -> list[FeatureSpec]:
    return [
        *_pair("m*n*K", load_stage, "aggregate load", lambda q: q["m"] * q["n"] * q["K"]),
        *_pair("m*K", "compute node", "load skew", lambda q: q["m"] * q["K"]),
        *_pair("K", "compute node", "load skew", lambda q: q["K"]),
        *_pair("m", "compute node", "resources in use", lambda q: q["m"]),
        *_pair("n", "compute node", "resources in use", lambda q: q["n"]),
    ]


def _interference() -> list[FeatureSpec]:
    return [
        FeatureSpec("interference:n", "interference", "interference", lambda q: q["n"]),
        FeatureSpec(
            "interference:1/(m*n*K)",
            "interference",
            "interference",
            lambda q: _inv(q["m"] * q["n"] * q["K"]),
        ),
        FeatureSpec(
            "interference:n/(m*n*K)",
            "interference",
            "interference",
            lambda q: q["n"] * _inv(q["m"] * q["n"] * q["K"]),
        ),
    ]


def _lustre_specs() -> list[FeatureSpec]:
    def srmk(q):
        return q["s_r"] * q["m"] * q["K"]

    return [
        *_pair("m*n", "metadata", "aggregate load", lambda q: q["m"] * q["n"]),
        *_common_compute("compute node .. OST"),
        *_pair("s_r*m*K", "I/O router", "load skew", srmk),
        *_pair("n_r", "I/O router", "resources in use", lambda q: q["n_r"]),
        *_pair("s_oss", "OSS", "load skew", lambda q: q["s_oss"]),
        *_pair("n_oss", "OSS", "resources in use", lambda q: q["n_oss"]),
        *_pair("s_ost", "OST", "load skew", lambda q: q["s_ost"]),
        *_pair("n_ost", "OST", "resources in use", lambda q: q["n_ost"]),
        FeatureSpec(
            "(m*K)*(s_r*m*K)",
            "compute node x I/O router",
            "cross-stage",
            lambda q: q["m"] * q["K"] * srmk(q),
        ),
        FeatureSpec(
            "(s_r*m*K)*n_oss", "I/O router x OSS", "cross-stage", lambda q: srmk(q) * q["n_oss"]
        ),
        FeatureSpec("s_oss*s_ost", "OSS x OST", "cross-stage", lambda q: q["s_oss"] * q["s_ost"]),
        *_interference(),
    ]


#: GPFS feature counts: 43 (every distinct symbol of Table I) or the paper's 41.
GPFS_COUNTS = (43, 41)


def _gpfs_specs(count: int = 43) -> list[FeatureSpec]:
    def skew(key):
        return lambda q: q[key] * q["m"] * q["K"]

    return [
        *_pair("m*n", "metadata", "aggregate load", lambda q: q["m"] * q["n"]),
        *_pair("s_io*m", "metadata", "load skew", lambda q: q["s_io"] * q["m"]),
        *_pair("n_io", "metadata, I/O node", "resources in use", lambda q: q["n_io"]),
        FeatureSpec(
            "m*n*p_sub", "subblock", "aggregate load", lambda q: q["m"] * q["n"] * q["p_sub"]
        ),
        FeatureSpec(
            "s_io*m*p_sub", "subblock", "load skew", lambda q: q["s_io"] * q["m"] * q["p_sub"]
        ),
        *_common_compute("compute node .. NSD (network)"),
        *_pair("s_b*m*K", "bridge node", "load skew", skew("s_b")),
        *_pair("n_b", "bridge node", "resources in use", lambda q: q["n_b"]),
        *_pair("s_l*m*K", "link", "load skew", skew("s_l")),
        *_pair("n_l", "link", "resources in use", lambda q: q["n_l"]),
        *_pair("s_io*m*K", "I/O node", "load skew", skew("s_io")),
        *_pair("n_s", "NSD server", "resources in use", lambda q: q["n_s"]),
        # the paper's 41 drop n_nsds and 1/n_nsds (docs/perfmodel.md, "GPFS count")
        *(
            _pair("n_nsds", "NSD server", "resources in use", lambda q: q["n_nsds"])
            if count == 43
            else ()
        ),
        *_pair("n_d", "NSD", "resources in use", lambda q: q["n_d"]),
        *_pair("n_nsd", "NSD", "resources in use", lambda q: q["n_nsd"]),
        FeatureSpec(
            "(m*K)*(s_b*m*K)",
            "compute node x bridge node",
            "cross-stage",
            lambda q: q["m"] * q["K"] * skew("s_b")(q),
        ),
        FeatureSpec(
            "(s_b*m*K)*(s_l*m*K)",
            "bridge node x link",
            "cross-stage",
            lambda q: skew("s_b")(q) * skew("s_l")(q),
        ),
        FeatureSpec(
            "(s_l*m*K)*(s_io*m*K)",
            "link x I/O node",
            "cross-stage",
            lambda q: skew("s_l")(q) * skew("s_io")(q),
        ),
        FeatureSpec(
            "(s_b*m*K)*n_nsds",
            "bridge node x NSD server",
            "cross-stage",
            lambda q: skew("s_b")(q) * q["n_nsds"],
        ),
        *_interference(),
    ]


def feature_specs(platform: Platform, *, gpfs_count: int = 43) -> list[FeatureSpec]:
    """The features of ``platform``'s write path, in Table I / II order; a GPFS path has
    ``gpfs_count`` of them: 43 (iosight) or 41 (the paper's count, without ``n_nsds``)."""
    check_param("gpfs_count", gpfs_count, gpfs_count in GPFS_COUNTS, "43 or 41")
    return _lustre_specs() if platform.filesystem == "lustre" else _gpfs_specs(gpfs_count)


def feature_names(platform: Platform, *, gpfs_count: int = 43) -> list[str]:
    """The names of the model's features on ``platform``, in column order.

    ``gpfs_count``: GPFS's count of targets in the features (Table II).
    """
    return [s.name for s in feature_specs(platform, gpfs_count=gpfs_count)]


def place_nodes(
    platform: Platform, n: int, placement: str = "block", *, first: int = 0, seed: int = 0
) -> np.ndarray:
    """Node indices of a job: ``block`` (``first .. first+n-1``) or ``random`` (seeded).

    ``platform``: the platform; ``n``: the job's node count; ``placement``: ``block`` or
    ``random``; ``first``: the block's first node; ``seed``: the random placement's seed.
    """
    check_param("placement", placement, placement in PLACEMENTS, "'block' or 'random'")
    check_seed(seed)
    check_param("nodes", n, 1 <= n <= platform.nodes, f"between 1 and {platform.nodes}")
    if placement == "block":
        check_param(
            "first",
            first,
            0 <= first and first + n <= platform.nodes,
            f"a node index with first + nodes <= {platform.nodes}",
        )
        return np.arange(first, first + n)
    return np.sort(np.random.default_rng(seed).choice(platform.nodes, n, replace=False))


def _stage_use(platform: Platform, stage: str, nodes: np.ndarray) -> tuple[int, int]:
    """(largest node group on one component, components in use) for a forwarding stage."""
    comp = platform.stage(stage).component(nodes, platform.nodes)
    counts = np.bincount(comp)
    return int(counts.max()), int(np.count_nonzero(counts))


def striped_bytes(
    n_files: int, size: int, unit: int, width: int, n_targets: int, start: np.ndarray
) -> np.ndarray:
    """Bytes on each target when ``n_files`` files of ``size`` bytes are striped round robin.

    Unit ``j`` of a file (``unit`` bytes, the last one partial) lands on target
    ``(start + j mod width) mod n_targets`` (Fig. 3: Lustre stripes, GPFS blocks).
    """
    units = math.ceil(size / unit)
    used = min(width, units)  # slots a file actually touches
    slot = np.arange(used)
    per_slot = (units // width + (slot < units % width)) * float(unit)
    per_slot[(units - 1) % width] -= units * unit - size  # partial last unit
    tgt = ((np.asarray(start)[:, None] + slot[None, :]) % n_targets).ravel()
    return np.bincount(tgt, weights=np.tile(per_slot, n_files), minlength=n_targets)


def start_targets(platform: Platform, pattern: WritePattern, seed: int) -> np.ndarray:
    """First target of every file: Lustre ``sequence``/``random`` policy, GPFS random."""
    n_files = pattern.nodes * pattern.cores
    sto = platform.storage
    policy = (
        (pattern.start_target or sto.start_target)
        if platform.filesystem == "lustre"
        else ("random")
    )
    if policy == "sequence":
        w = pattern.stripes or sto.default_stripe_count
        return (pattern.first_target + np.arange(n_files) * w) % sto.targets
    return np.random.default_rng(seed).integers(0, sto.targets, n_files)


def target_bytes(platform: Platform, pattern: WritePattern, seed: int = 0) -> np.ndarray:
    """Bytes each OST / NSD receives from ``pattern`` (length: the platform's targets).

    ``platform``: the platform; ``seed``: the random placement's seed.
    """
    sto = platform.storage
    start = start_targets(platform, pattern, seed)
    if platform.filesystem == "lustre":
        unit, width = sto.stripe_size, pattern.stripes or sto.default_stripe_count
    else:
        unit, width = sto.block_size, sto.targets
    return striped_bytes(len(start), pattern.size, unit, width, sto.targets, start)


def _lustre_targets(
    platform: Platform, pattern: WritePattern, seed: int
) -> tuple[float, int, float, int]:
    """(s_oss, n_oss, s_ost, n_ost): bytes on the busiest OSS/OST and how many are used."""
    sto = platform.storage
    ost_bytes = target_bytes(platform, pattern, seed)
    oss_bytes = np.bincount(
        sto.server_of(np.arange(sto.targets)), weights=ost_bytes, minlength=sto.servers
    )
    return (
        float(oss_bytes.max()),
        int(np.count_nonzero(oss_bytes)),
        float(ost_bytes.max()),
        int(np.count_nonzero(ost_bytes)),
    )


def write_path_loads(
    platform: Platform, pattern: WritePattern, nodes: np.ndarray | None = None, *, seed: int = 0
) -> dict[str, float]:
    """The quantities the features are built from (``m, n, K, s_r, n_r, ...``), §III-A.

    ``nodes`` is the placement (default: the first ``n`` nodes); ``seed`` drives the random
    starting-OST policy.
    """
    pattern.check(platform)
    if nodes is None:
        nodes = place_nodes(platform, pattern.nodes)
    nodes = np.asarray(nodes, dtype=np.int64)
    if len(nodes) != pattern.nodes or len(np.unique(nodes)) != len(nodes):
        raise IosightError(
            f"a placement needs {pattern.nodes} distinct node indices; got "
            f"{len(np.unique(nodes))} distinct of {len(nodes)}"
        )
    if nodes.min() < 0 or nodes.max() >= platform.nodes:
        raise IosightError(f"node indices must lie in 0..{platform.nodes - 1}")
    m, n, k = pattern.cores, pattern.nodes, pattern.size
    q: dict[str, float] = {"m": m, "n": n, "K": k}
    if platform.filesystem == "lustre":
        q["s_r"], q["n_r"] = _stage_use(platform, "router", nodes)
        q["s_oss"], q["n_oss"], q["s_ost"], q["n_ost"] = _lustre_targets(platform, pattern, seed)
        return q
    sto = platform.storage
    for key, stage in (("b", "bridge"), ("l", "link"), ("io", "io_node")):
        q[f"s_{key}"], q[f"n_{key}"] = _stage_use(platform, stage, nodes)
    sub = sto.block_size // sto.subblocks
    q["p_sub"] = math.ceil((k % sto.block_size) / sub)
    q["n_d"] = min(math.ceil(k / sto.block_size), sto.targets)
    q["n_s"] = min(q["n_d"], sto.servers)
    q["n_nsd"], q["n_nsds"] = m * n * q["n_d"], m * n * q["n_s"]
    return q


def features_from_loads(platform: Platform, loads, *, gpfs_count: int = 43) -> pd.DataFrame:
    """Evaluate every feature on a table of quantities (one row per pattern), vectorised."""
    import pandas as pd

    q = {k: np.asarray(v, dtype=float) for k, v in pd.DataFrame(loads).items()}
    specs = feature_specs(platform, gpfs_count=gpfs_count)
    return pd.DataFrame({s.name: s.fn(q) for s in specs})


def compute_features(
    platform: Platform,
    patterns,
    *,
    placement: str = "block",
    seed: int = 0,
) -> pd.DataFrame:
    """Features for every row of ``patterns`` (columns ``nodes, cores, size[, stripes]``).

    Rows may carry ``first_node`` (block placement start) and ``first_target``.

    ``platform``: the platform the patterns run on; ``placement``: ``block`` or ``random`` node
    placement; ``seed``: the random placement's seed.
    """
    import pandas as pd

    df = pd.DataFrame(patterns)
    need = {"nodes", "cores", "size"}
    if not need <= set(df.columns):
        raise IosightError(f"patterns need columns {sorted(need)}; got {list(df.columns)}")
    rows = []
    for i, r in enumerate(df.itertuples(index=False)):
        stripes = getattr(r, "stripes", None)
        stripes = None if stripes is None or pd.isna(stripes) else int(stripes)
        pat = WritePattern(
            int(r.nodes),
            int(r.cores),
            int(r.size),
            stripes,
            first_target=int(getattr(r, "first_target", 0) or 0),
        )
        first = int(getattr(r, "first_node", 0) or 0)
        nodes = place_nodes(platform, pat.nodes, placement, first=first, seed=seed + i)
        rows.append(write_path_loads(platform, pat, nodes, seed=seed + i))
    out = features_from_loads(platform, rows)
    out.index = df.index
    return out


def describe_features(
    platform: Platform,
    pattern: WritePattern,
    nodes: np.ndarray | None = None,
    *,
    seed: int = 0,
    gpfs_count: int = 43,
) -> pd.DataFrame:
    """One row per feature (stage, parameter, feature, value) for ``features`` output.

    ``platform``: the platform the pattern runs on; ``pattern``: the write pattern; ``nodes``:
    its compute nodes (default: a block from node 0); ``seed``: the random placement's seed;
    ``gpfs_count``: GPFS's count of targets in the features (Table II).
    """
    import pandas as pd

    loads = write_path_loads(platform, pattern, nodes, seed=seed)
    values = features_from_loads(platform, [loads], gpfs_count=gpfs_count).iloc[0]
    return pd.DataFrame(
        [
            {
                "stage": s.stage,
                "parameter": s.parameter,
                "feature": s.name,
                "value": float(values[s.name]),
            }
            for s in feature_specs(platform, gpfs_count=gpfs_count)
        ]
    )
