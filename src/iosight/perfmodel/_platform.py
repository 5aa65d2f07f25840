"""Platform descriptions: the stages of a write path and how components map onto each other.

A platform is read from YAML (``platforms/titan.yaml`` and ``platforms/cetus.yaml`` ship
with iosight) and validated once, here; everything downstream trusts it.

References
----------
.. [1] Xie et al., "Applying Machine Learning to Understand Write Performance of
   Large-scale Parallel Filesystems", §II-B (Fig. 2, Fig. 3).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iosight._errors import IosightError
from iosight._shipped import read_path_or_shipped, shipped_names

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}

# the forwarding stages each file system's features need, in write order (§III-A2, §III-A3)
REQUIRED_STAGES = {"lustre": ("router",), "gpfs": ("bridge", "link", "io_node")}
_STORAGE_KEYS = {
    "lustre": {"stripe_size", "default_stripe_count", "start_target"},
    "gpfs": {"block_size", "subblocks"},
}
_MAPPINGS = ("block", "cyclic")
_START_POLICIES = ("sequence", "random")


MAX_SIZE = 1024**5  # 1 PiB: far past any file or stripe, small enough for exact arithmetic


def parse_size(value: str | int | float) -> int:
    """Bytes from ``"1GiB"``, ``"8 MB"``, ``"4096"`` or a number (decimal and binary units),
    at most :data:`MAX_SIZE` (1 PiB).

    ``value``: the size as text or a number of bytes.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        size = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
        if not m or m.group(2).lower() not in _UNITS:
            raise IosightError(
                f"cannot read {value!r} as a size; write e.g. 1GiB, 256MiB, 8MB or 4096"
            )
        size = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not 0 < size <= MAX_SIZE:  # NaN fails too
        raise IosightError(
            f"a size must be positive and at most {MAX_SIZE // 1024**4}TiB. Got {value!r} instead."
        )
    return int(round(size))


@dataclass(frozen=True)
class Stage:
    """A forwarding stage inside the supercomputer (router, bridge node, link, I/O node).

    ``mapping`` says which component serves compute node ``i``: ``block`` gives contiguous
    groups of ``ceil(nodes / count)`` nodes, ``cyclic`` gives ``i mod count``.

    ``name``: the stage's name; ``count``: how many components it has.
    """

    name: str
    count: int
    mapping: str = "block"

    def component(self, nodes: np.ndarray, n_nodes: int) -> np.ndarray:
        """The component index serving each compute node in ``nodes``.

        ``n_nodes``: the platform's compute nodes.
        """
        if self.mapping == "block":
            return nodes // math.ceil(n_nodes / self.count)
        return nodes % self.count


@dataclass(frozen=True)
class Storage:
    """Servers (OSS / NSD server) and targets (OST / NSD), with the striping settings.

    ``servers``: OSS / NSD servers; ``targets``: OSTs / NSDs; ``target_to_server``: ``cyclic``
    or ``block``: how targets map onto servers.
    """

    servers: int
    targets: int
    target_to_server: str = "cyclic"
    stripe_size: int | None = None  # Lustre
    default_stripe_count: int | None = None  # Lustre
    start_target: str | None = None  # Lustre: sequence | random
    block_size: int | None = None  # GPFS
    subblocks: int | None = None  # GPFS

    def server_of(self, targets: np.ndarray) -> np.ndarray:
        """Server of each target: ``i mod servers`` (cyclic, §II-B) or contiguous blocks.

        ``targets``: target indices.
        """
        if self.target_to_server == "cyclic":
            return targets % self.servers
        return targets // (self.targets // self.servers)


@dataclass(frozen=True)
class Platform:
    """A write path: compute nodes, forwarding stages, a network and a file system.

    ``name``: the platform's name; ``filesystem``: ``lustre`` or ``gpfs``; ``nodes``: compute
    nodes; ``cores_per_node``: cores per compute node; ``stages``: the forwarding stages, nodes
    to storage; ``network``: the interconnect's name; ``storage``: the file system's servers and
    targets; ``description``: a line about the machine.
    """

    name: str
    filesystem: str
    nodes: int
    cores_per_node: int
    stages: tuple[Stage, ...]
    network: str
    storage: Storage
    description: str = ""

    def stage(self, name: str) -> Stage:
        """The stage called ``name`` of the write path (an error if there is none)."""
        for st in self.stages:
            if st.name == name:
                return st
        raise IosightError(f"platform {self.name!r} has no stage {name!r}")

    def to_dict(self) -> dict:
        """The YAML mapping of this platform (round-trips through ``platform_from_dict``)."""
        s = self.storage
        keys = ("servers", "targets", "target_to_server") + tuple(
            sorted(_STORAGE_KEYS[self.filesystem])
        )
        return {
            "name": self.name,
            "filesystem": self.filesystem,
            "description": self.description,
            "compute": {"nodes": self.nodes, "cores_per_node": self.cores_per_node},
            "stages": [
                {"name": st.name, "count": st.count, "mapping": st.mapping} for st in self.stages
            ],
            "network": self.network,
            "storage": {k: getattr(s, k) for k in keys},
        }

    def summary(self):
        """One row per stage of the write path (``platform show``)."""
        import pandas as pd

        rows = [
            {"stage": "metadata", "components": 1, "mapping": "whole file system"},
            {
                "stage": "compute node",
                "components": self.nodes,
                "mapping": f"{self.cores_per_node} cores each",
            },
        ]
        for st in self.stages:
            per = math.ceil(self.nodes / st.count)
            how = f"block: {per} nodes each" if st.mapping == "block" else f"node mod {st.count}"
            rows.append({"stage": st.name, "components": st.count, "mapping": how})
        rows.append({"stage": self.network, "components": 1, "mapping": "shared as a whole"})
        s = self.storage
        server, target = ("OSS", "OST") if self.filesystem == "lustre" else ("NSD server", "NSD")
        per_server = s.targets // s.servers
        rows.append(
            {"stage": server, "components": s.servers, "mapping": f"{per_server} {target}s each"}
        )
        if self.filesystem == "lustre":
            how = (
                f"{target} i -> {server} i mod {s.servers}; stripe size "
                f"{s.stripe_size} B, default count {s.default_stripe_count}, "
                f"start {s.start_target}"
            )
        else:
            how = (
                f"{target} i -> {server} i mod {s.servers}; block {s.block_size} B, "
                f"{s.subblocks} subblocks, random start, round robin"
            )
        rows.append({"stage": target, "components": s.targets, "mapping": how})
        return pd.DataFrame(rows)


def _positive_int(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise IosightError(f"{where} must be a positive integer. Got {value!r} instead.")
    return value


def _only_keys(where: str, data: dict, allowed: set[str]) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise IosightError(
            f"unknown key(s) in {where}: {', '.join(extra)}; allowed: {', '.join(sorted(allowed))}"
        )


def platform_from_dict(data: dict, source: str = "<dict>") -> Platform:
    """Build and validate a :class:`Platform` from the parsed YAML mapping."""
    if not isinstance(data, dict):
        raise IosightError(f"{source}: a platform description must be a YAML mapping")
    _only_keys(
        source,
        data,
        {"name", "filesystem", "description", "compute", "stages", "network", "storage"},
    )
    for key in ("name", "filesystem", "compute", "stages", "storage"):
        if key not in data:
            raise IosightError(f"{source}: missing required key {key!r}")
    fs = str(data["filesystem"]).lower()
    if fs not in REQUIRED_STAGES:
        raise IosightError(f"{source}: filesystem must be 'lustre' or 'gpfs'. Got {fs!r} instead.")
    nodes, cores = _compute(source, data["compute"])
    stages = _stages(source, data["stages"], nodes, fs)
    return Platform(
        name=str(data["name"]),
        filesystem=fs,
        nodes=nodes,
        cores_per_node=cores,
        stages=tuple(stages),
        network=str(data.get("network", "network")),
        storage=_storage(source, data["storage"], fs),
        description=str(data.get("description", "")),
    )


def _compute(source: str, comp: object) -> tuple[int, int]:
    """(nodes, cores per node) of the ``compute`` section."""
    if not isinstance(comp, dict):
        raise IosightError(f"{source}: 'compute' must be a mapping with nodes and cores_per_node")
    _only_keys(f"{source} compute", comp, {"nodes", "cores_per_node"})
    nodes = _positive_int(f"{source}: compute.nodes", comp.get("nodes"))
    cores = _positive_int(f"{source}: compute.cores_per_node", comp.get("cores_per_node"))
    return nodes, cores


def _stages(source: str, listed: object, nodes: int, fs: str) -> list[Stage]:
    """The ``stages`` section: the write path's stages of a ``fs`` platform, in order."""
    if not isinstance(listed, list):
        raise IosightError(f"{source}: 'stages' must be a list of {{name, count, mapping}}")
    stages = [_stage(source, i, st, nodes) for i, st in enumerate(listed)]
    names = tuple(s.name for s in stages)
    if names != REQUIRED_STAGES[fs]:
        raise IosightError(
            f"{source}: a {fs} write path needs the stages {list(REQUIRED_STAGES[fs])} in that "
            f"order (Xie et al. (2019), §III-A). Got {list(names)} instead."
        )
    if fs == "gpfs":
        _check_nesting(source, nodes, stages)
    return stages


def _stage(source: str, i: int, st: object, nodes: int) -> Stage:
    if not isinstance(st, dict):
        raise IosightError(f"{source}: stages[{i}] must be a mapping")
    _only_keys(f"{source} stages[{i}]", st, {"name", "count", "mapping"})
    count = _positive_int(f"{source}: stages[{i}].count", st.get("count"))
    if count > nodes:
        raise IosightError(
            f"{source}: stage {st.get('name')!r} has {count} components but only "
            f"{nodes} compute nodes feed it"
        )
    mapping = st.get("mapping", "block")
    if mapping not in _MAPPINGS:
        raise IosightError(
            f"{source}: stages[{i}].mapping must be block or cyclic. Got {mapping!r} instead."
        )
    return Stage(str(st.get("name")), count, mapping)


def _storage(source: str, sto: object, fs: str) -> Storage:
    """The ``storage`` section: servers, targets and the file system's own layout."""
    if not isinstance(sto, dict):
        raise IosightError(f"{source}: 'storage' must be a mapping")
    _only_keys(
        f"{source} storage", sto, {"servers", "targets", "target_to_server"} | _STORAGE_KEYS[fs]
    )
    missing = sorted(_STORAGE_KEYS[fs] - set(sto))
    if missing:
        raise IosightError(f"{source}: storage of a {fs} platform needs {', '.join(missing)}")
    servers = _positive_int(f"{source}: storage.servers", sto.get("servers"))
    targets = _positive_int(f"{source}: storage.targets", sto.get("targets"))
    if targets % servers:
        raise IosightError(
            f"{source}: {targets} targets cannot be spread evenly over {servers} servers; "
            "each server must manage the same number of targets"
        )
    t2s = sto.get("target_to_server", "cyclic")
    if t2s not in _MAPPINGS:
        raise IosightError(
            f"{source}: storage.target_to_server must be block or cyclic. Got {t2s!r} instead."
        )
    layout = _lustre_layout(source, sto, targets) if fs == "lustre" else _gpfs_layout(source, sto)
    return Storage(servers, targets, t2s, **layout)


def _lustre_layout(source: str, sto: dict, targets: int) -> dict:
    """Lustre's striping: stripe size, default stripe count, first-OST policy."""
    w = _positive_int(f"{source}: storage.default_stripe_count", sto["default_stripe_count"])
    if w > targets:
        raise IosightError(f"{source}: default_stripe_count {w} exceeds the {targets} OSTs")
    if sto["start_target"] not in _START_POLICIES:
        raise IosightError(
            f"{source}: storage.start_target must be sequence or random. "
            f"Got {sto['start_target']!r} instead."
        )
    return {"stripe_size": parse_size(sto["stripe_size"]), "default_stripe_count": w,
            "start_target": sto["start_target"]}  # fmt: skip


def _gpfs_layout(source: str, sto: dict) -> dict:
    """GPFS's blocks: block size and subblocks per block."""
    block = parse_size(sto["block_size"])
    subblocks = _positive_int(f"{source}: storage.subblocks", sto["subblocks"])
    if block % subblocks:
        raise IosightError(
            f"{source}: block_size {block} is not a multiple of {subblocks} subblocks"
        )
    return {"block_size": block, "subblocks": subblocks}


def _check_nesting(source: str, nodes: int, stages: list[Stage]) -> None:
    """GPFS/BG-Q: every bridge node reaches one link and every link one I/O node (§II-B1)."""
    for inner, outer in zip(stages, stages[1:], strict=False):
        if inner.mapping != "block" or outer.mapping != "block":
            raise IosightError(f"{source}: gpfs forwarding stages must use block mappings")
        a, b = math.ceil(nodes / inner.count), math.ceil(nodes / outer.count)
        if b % a:
            raise IosightError(
                f"{source}: {inner.name} groups of {a} nodes do not nest in {outer.name} groups "
                f"of {b} nodes; each {inner.name} must feed exactly one {outer.name}"
            )


def builtin_platforms() -> list[str]:
    """Names of the platform descriptions shipped with iosight."""
    return shipped_names("iosight.perfmodel", "platforms", ".yaml")


def load_platform(path_or_name: str | Path) -> Platform:
    """Read a platform from a YAML file, or a shipped one by name (``titan``, ``cetus``).

    ``path_or_name``: a platform YAML file, or a shipped platform's name.
    """
    import yaml

    text, source = read_path_or_shipped(
        path_or_name, "iosight.perfmodel", "platforms", ".yaml", "platform"
    )
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise IosightError(f"{source} is not valid YAML: {err}") from None
    return platform_from_dict(data, source)
