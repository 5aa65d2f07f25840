"""Do iosight's record ids match real Darshan logs? darshan_hash(name) vs the logged id.

Reads every name record of every ``*.darshan`` log in a directory (default
``$IOSIGHT_SHARED/darshan-logs``, else ``../shared/darshan-logs``) with PyDarshan and
prints, per Darshan runtime version, how many ids ``iosight.trace.darshan_hash``
reproduces from the record's name. Logs whose
names were replaced (``darshan-convert --obfuscate``: the ``<STDIN>`` record is renamed)
are counted apart, and so are logs with DFS/DAOS modules, whose records are named by
object or container-relative names that are not what Darshan hashed.

    python benchmarks/trace_record_ids.py [--dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _obfuscated(names: dict[int, str]) -> bool:
    """Darshan always names its stdin record "<STDIN>"; obfuscated logs renamed it."""
    from iosight.trace import darshan_hash

    stdin = names.get(darshan_hash("<STDIN>"))
    return stdin is not None and stdin != "<STDIN>"


def _dfs_name(name: str) -> bool:
    """DFS names of pre-3.4 logs: ``<pool uuid>:<container uuid>:<path>``."""
    return name.count(":") >= 2 and not name.startswith("/") and len(name.split(":")[0]) == 36


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(os.environ.get("IOSIGHT_SHARED", ROOT.parent / "shared"))
    parser.add_argument("--dir", type=Path, default=shared / "darshan-logs")
    parser.add_argument("--quick", action="store_true", help="first 20 logs only")
    args = parser.parse_args(argv)
    from darshan.backend import cffi_backend as cb

    from iosight.trace import darshan_hash

    logs = sorted(args.dir.glob("*.darshan"))[: 20 if args.quick else None]
    if not logs:
        sys.exit(f"no .darshan logs in {args.dir}")
    rows = collections.defaultdict(lambda: [0, 0, 0])  # logs, records, matched
    for path in logs:
        handle = cb.log_open(str(path))
        try:
            names = cb.log_get_name_records(handle)
            ver = cb.log_get_job(handle)["metadata"].get("lib_ver", "?")
            mods = set(cb.log_get_modules(handle))
        finally:
            cb.log_close(handle)
        if _obfuscated(names):
            kind = "obfuscated names"
        elif mods & {"DFS", "DAOS"} or any(_dfs_name(n) for n in names.values()):
            kind = "DFS/DAOS"
        else:
            kind = "path names"
        row = rows[(kind, ver)]
        row[0] += 1
        row[1] += len(names)
        row[2] += sum(darshan_hash(name) == rid for rid, name in names.items())
    print(f"{'logs with':>16s} {'darshan':>11s} {'logs':>5s} {'records':>8s} {'matched':>8s}")
    totals = collections.defaultdict(lambda: [0, 0, 0])
    for (kind, ver), r in sorted(rows.items()):
        print(f"{kind:>16s} {ver:>11s} {r[0]:5d} {r[1]:8d} {r[2]:8d}")
        totals[kind] = [a + b for a, b in zip(totals[kind], r, strict=True)]
    for kind, r in sorted(totals.items()):
        pct = 100 * r[2] / max(r[1], 1)
        print(f"{kind}: {r[0]} logs, ids reproduced for {r[2]}/{r[1]} records ({pct:.2f} %)")


if __name__ == "__main__":
    main()
