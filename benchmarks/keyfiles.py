"""The key index's fill: each live file's job-key hashes loaded from its sidecar (what
``iosight serve`` does at a page's first ask) vs read from its ``job_key`` column (the
baseline: what its background thread does for a file without one), on a warehouse as it
is. Read only: it writes nothing (sidecars are written by the commits).

    python benchmarks/keyfiles.py -w WAREHOUSE [--tables heatmap jobs]
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    import numpy  # noqa: F401  (imported before timing: the server has it)

    from iosight.warehouse import Warehouse, _keyfiles  # the index's own readers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--warehouse", required=True)
    ap.add_argument("--tables", nargs="*", help="default: every table")
    args = ap.parse_args()
    wh = Warehouse(args.warehouse, create=False)
    print(f"load average before: {os.getloadavg()}")
    total = [0, 0.0, 0.0, 0.0, 0]  # files, sidecar CPU, column CPU, column wall, bytes
    for name in args.tables or wh.tables():
        entries = [(e.path, e.stat().st_size) for e in wh.table_entries(name)]
        c = time.process_time()
        loaded = [(p, _keyfiles.read_keys(p, size)) for p, size in entries]
        side = time.process_time() - c
        loaded = [(p, got) for p, got in loaded if got is not None]
        if not loaded:
            continue
        c, w = time.process_time(), time.perf_counter()
        by_row = name in _keyfiles.BY_ROW
        for path, got in loaded:
            assert _keyfiles.key_hashes([(path, by_row)])[0][0].tolist() == got[0].tolist()
        col, wall = time.process_time() - c, time.perf_counter() - w
        size = sum(g[0].nbytes + (0 if g[1] is None else g[1].nbytes) for _, g in loaded)
        print(
            f"{name:14} {len(loaded):4} of {len(entries):4} files with sidecars: loaded in "
            f"{1000 * side:7.1f} ms CPU; read from the column {col:7.2f} s CPU "
            f"({wall:.2f} s wall): {col / max(side, 1e-6):,.0f}x; {size / 2**20:.1f} MiB"
        )
        total = [a + b for a, b in zip(total, [len(loaded), side, col, wall, size], strict=True)]
    files, side, col, wall, size = total
    print(
        f"all: {files} files, sidecars {1000 * side:.0f} ms CPU vs columns {col:.1f} s CPU "
        f"({wall:.1f} s wall); index {size / 2**20:.1f} MiB; load average {os.getloadavg()}"
    )


if __name__ == "__main__":
    main()
