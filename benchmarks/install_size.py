"""Measure: how much disk the running Python environment takes (the README's venv table).

Run it with the venv's own interpreter after the install you want to measure, e.g.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install --no-compile -e . \\
        && /tmp/v/bin/python benchmarks/install_size.py

It prints the environment's size as ``du`` counts it (allocated blocks), the share of
bytecode (``*.pyc``), the largest installed packages, and whether any NVIDIA package is
present (the default ``xgboost`` wheel brings NCCL; iosight depends on ``xgboost-cpu``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

MB = 1 << 20


def _size(path: Path) -> tuple[int, int]:
    """Bytes allocated below ``path`` (as ``du``), and those of ``*.pyc`` files."""
    total = pyc = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            used = st.st_blocks * 512
            total += used
            if name.endswith(".pyc"):
                pyc += used
    return total, pyc


def main() -> None:
    prefix = Path(sys.prefix)
    site = Path(sysconfig.get_paths()["purelib"])
    total, pyc = _size(prefix)
    print(f"environment {prefix}: {total / MB:,.0f} MB, of it bytecode {pyc / MB:,.0f} MB")
    entries = [p for p in site.iterdir() if not p.name.endswith(("-info", "__pycache__"))]
    sizes = sorted(
        ((_size(p)[0] if p.is_dir() else os.lstat(p).st_blocks * 512, p.name) for p in entries),
        reverse=True,
    )
    print("largest packages:", ", ".join(f"{n} {s / MB:,.0f} MB" for s, n in sizes[:8]))
    nvidia = [p.name for p in site.iterdir() if "nvidia" in p.name.lower()]
    print(f"NVIDIA packages: {len(nvidia)}{' (' + ', '.join(nvidia) + ')' if nvidia else ''}")


if __name__ == "__main__":
    main()
