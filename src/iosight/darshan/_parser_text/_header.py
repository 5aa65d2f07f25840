"""Header comments of a ``darshan-parser`` dump: job fields, metadata, mounts, module
sections, partial flags, ``--perf`` lines and DXT file names (the format is described in
``_read.py``)."""

from __future__ import annotations

import bz2
import gzip
import re
import zlib
from pathlib import Path

from iosight._errors import CorruptLogError

_PERF = re.compile(r"(total_bytes|agg_perf_by_slowest|agg_time_by_slowest): (\S+)")


def _text_of(path: Path) -> str:
    raw = path.read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        elif raw[:3] == b"BZh":
            raw = bz2.decompress(raw)
    except (OSError, EOFError, ValueError, zlib.error) as err:
        raise CorruptLogError(f"damaged compressed parser output ({err})") from None
    return raw.decode("utf-8", "replace").replace("\r\n", "\n")


def _header(lines: list[str]) -> dict:
    """Job fields, metadata, mounts, module sections and partial flags from ``# `` lines."""
    head: dict = {"metadata": {}, "mounts": [], "modules": [], "partial": [], "perf": {}}
    head["dxt_names"] = {}
    module = ""
    for line in lines:
        if not line.startswith("# "):
            continue
        body = line[2:]
        perf = _PERF.match(body)
        if perf and module:
            tag = module.replace("-", "").replace("/", "")
            head["perf"].setdefault(tag, {})[perf.group(1)] = perf.group(2)
            continue
        if body.startswith("DXT, file_id:"):
            rid, _, name = body[len("DXT, file_id:") :].partition(", file_name: ")
            head["dxt_names"].setdefault(int(rid), name)
            continue
        if body.startswith("mount entry:"):
            parts = body.split("\t")
            if len(parts) >= 3:
                head["mounts"].append((parts[1], parts[2]))
            continue
        if body.startswith("metadata: "):
            key, _, value = body[len("metadata: ") :].partition(" = ")
            head["metadata"][key] = value
            continue
        m = re.fullmatch(r"(\S+) module data", body)
        if m:
            module = m.group(1)
            head["modules"].append(module)
            continue
        m = re.match(r"\*WARNING\*: The (\S+) module contains incomplete data", body)
        if m:
            head["partial"].append(m.group(1))
            continue
        key, sep, value = body.partition(": ")
        if sep and key in (
            "darshan log version",
            "exe",
            "uid",
            "jobid",
            "start_time",
            "end_time",
            "nprocs",
            "run time",
        ):
            head.setdefault(key, value.strip() if key != "exe" else value)
    return head


def _number(head: dict, key: str, kind: type) -> int | float:
    if key not in head:
        raise CorruptLogError(f"parser output lacks the '# {key}:' header line")
    try:
        return kind(float(head[key])) if kind is int and "." in head[key] else kind(head[key])
    except ValueError:
        raise CorruptLogError(f"bad '# {key}:' value {head[key][:40]!r}") from None
