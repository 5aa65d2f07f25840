"""Decompression bombs through the native reader: a real log whose region of one module
(or its name records) is replaced by a zlib region inflating to 64 MiB of zeros (65 KB of
file; 1 GiB would be 1 MB) or of one of its real records over and over.

Each log is read in a fresh process that measures its own peak memory (``VmHWM``, reset
just before the read) and CPU time: memory stays within what the reader's docstring
promises for what the region holds (:data:`BOUNDS`), and a region whose records give no
row costs a few times the work of inflating it alone (:data:`WORK`). Synthetic logs,
built from real ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import darshan3_logs as dl
from iosight.darshan._darshan3 import KNOWN_VERSIONS
from tests_support import SHARED

LOGS = SHARED / "darshan-logs"
SEED = (  # 3.41: POSIX, STDIO, LUSTRE, HEATMAP
    "darshan-logs__darshan_logs__dlio_logs__snyder_python3_id3116902-2110484_12-19-66980-"
    "9799170114715598281_1.darshan"
)
DXT_SEED = "darshan__darshan-util__pydarshan__darshan__tests__input__sample-dxt-simple.darshan"
MIB = 64
SLACK_MIB = 32  # the reader's fixed buffers (16 MiB zlib output pieces, numpy windows)
# peak memory over the inflated region's size, as the reader's docstring promises it
BOUNDS = {"no rows": 1.5, "up-converted": 2.5, "rows": 3.5, "segment or bin rows": 7.0}
# CPU time of reading a region whose records give no row over that of inflating it
# alone (and a second for the rest of the log): a few passes over the region
WORK = 5.0

_CHILD = r"""
import json, resource, sys, zlib
from pathlib import Path
from iosight._errors import CorruptLogError
from iosight.darshan._darshan3 import read_darshan3

def status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

bomb, seed, region = sys.argv[1], sys.argv[2], Path(sys.argv[3]).read_bytes()
tables = None
read_darshan3(seed)  # imports and first-call costs are not the bomb's
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
before, t0 = status("VmRSS"), cpu()
try:
    tables = read_darshan3(bomb)
    out = {"rows": {k: v.num_rows for k, v in tables.items() if hasattr(v, "num_rows")}}
except CorruptLogError as err:
    out = {"error": str(err)}
t1 = cpu()
out["peak"] = status("VmHWM") - before
out["read_s"] = t1 - t0
del tables
pos, inflated = 0, 0
while pos < len(region):  # the region alone, back-to-back streams: the work's yardstick
    d = zlib.decompressobj()
    inflated += len(d.decompress(region[pos:]))
    pos = len(region) - len(d.unused_data)
out["inflate_s"] = cpu() - t1
out["inflated"] = inflated
print(json.dumps(out))
"""


def _path(name: str) -> Path:
    path = LOGS / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("peak memory is read from Linux's /proc/self")
    return path


def _first_record(region: bytes, module: str) -> bytes:
    """The region's first record (its size read from its head, as libdarshan reads it);
    of DXT, the worst case for memory: the host name 63 bytes long, the first segment
    repeated 1,000 times (a row per segment, the name in each); of HEATMAP, every bin
    with a byte (a bin without bytes gives no row)."""
    word = lambda at: int.from_bytes(region[at : at + 8], "little", signed=True)  # noqa: E731
    if module.startswith("DXT"):
        head = region[:24] + b"h" * 63 + b"\0" + (1000).to_bytes(8, "little") + bytes(8)
        return head + region[104:136] * 1000
    if module == "HEATMAP":
        return region[:48] + (1).to_bytes(8, "little") * (2 * word(24))
    if module == "LUSTRE":
        return region[: 32 + 72 * word(16) + 8 * word(24)]
    return region[: {"POSIX": 88, "STDIO": 31}[module] * 8]  # words of the v4 / v2 records


def _zero_bomb(module: str, version: int, mib: int = MIB) -> tuple[dl.Log, bytes, Path]:
    """The seed log, its ``module`` region (of ``version``) ``mib`` MiB of zeros."""
    seed = _path(SEED)
    log = dl.split(seed.read_bytes())
    region = dl.zlib_repeated(bytes(1 << 20), mib << 20)
    log.set_deflated(module, version, region)
    return log, region, seed


def _names_bomb(mib: int = MIB) -> tuple[dl.Log, bytes, Path]:
    """The seed log, its name region ``mib`` MiB of zeros."""
    seed = _path(SEED)
    log = dl.split(seed.read_bytes())
    log.deflated_names = region = dl.zlib_repeated(bytes(1 << 20), mib << 20)
    return log, region, seed


def _row_bomb(module: str, seed_name: str, mib: int = MIB) -> tuple[dl.Log, bytes, Path, int]:
    """The seed log, its ``module`` region ``mib`` MiB of its first record repeated (and
    that record's size)."""
    seed = _path(seed_name)
    log = dl.split(seed.read_bytes())
    i = log.module_id(module)
    record = _first_record(log.modules[i], module)
    region = dl.zlib_repeated(record, mib << 20)
    log.set_deflated(module, log.versions[i], region)
    return log, region, seed, len(record)


def _measure(tmp_path: Path, log: dl.Log, region: bytes, seed: Path) -> dict:
    """Peak memory (bytes over the RSS before) and CPU seconds of reading ``log`` in a
    fresh process, and of inflating ``region`` alone."""
    bomb, raw = tmp_path / "bomb.darshan", tmp_path / "region.zlib"
    bomb.write_bytes(dl.join(log))
    raw.write_bytes(region)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, str(bomb), str(seed), str(raw)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def _check_memory(got: dict, kind: str) -> None:
    assert got["inflated"] > (MIB - 1) << 20
    bound = BOUNDS[kind] * got["inflated"] + (SLACK_MIB << 20)
    assert got["peak"] <= bound, (got["peak"] / 2**20, bound / 2**20, got)


def _check_work(got: dict) -> None:
    assert got["read_s"] <= WORK * got["inflate_s"] + 1.0, got


ZERO_BOMBS = [(m, v) for m, v in KNOWN_VERSIONS.items()] + [("POSIX", 3), ("LUSTRE", 1)]


@pytest.mark.slow
@pytest.mark.parametrize(("module", "version"), ZERO_BOMBS, ids=lambda x: str(x))
def test_region_of_zeros_builds_nothing(tmp_path: Path, module: str, version: int) -> None:
    """64 MiB of zeros: records of id 0 (no name record) and zero counts (no segment,
    bin, component): no table, memory for about the region itself (an old version's
    records are up-converted into a copy), work for about inflating it."""
    got = _measure(tmp_path, *_zero_bomb(module, version))
    table = {"MPI-IO": "mpiio", "BG/Q": "bgq"}.get(module, module.lower())
    assert table not in got["rows"], got
    _check_memory(got, "up-converted" if version < KNOWN_VERSIONS[module] else "no rows")
    _check_work(got)


@pytest.mark.slow
def test_name_records_of_zeros_cost_no_object_each(tmp_path: Path) -> None:
    """A name region of 64 MiB of zeros: 7.5 million records of id 0 and no name."""
    got = _measure(tmp_path, *_names_bomb())
    assert got["rows"]["names"] == 1, got
    _check_memory(got, "no rows")
    _check_work(got)


ROW_BOMBS = [
    ("POSIX", SEED),
    ("STDIO", SEED),
    ("LUSTRE", SEED),
    ("HEATMAP", SEED),
    ("DXT_POSIX", DXT_SEED),
    ("DXT_MPIIO", DXT_SEED),
]


@pytest.mark.slow
@pytest.mark.parametrize(("module", "seed_name"), ROW_BOMBS, ids=lambda x: str(x)[:12])
def test_region_of_one_record_over_and_over(tmp_path: Path, module: str, seed_name: str) -> None:
    """64 MiB of the region's first (named) record repeated: a row per record, segment,
    bin or component, in memory within the docstring's bound for such rows."""
    log, region, seed, size = _row_bomb(module, seed_name)
    got = _measure(tmp_path, log, region, seed)
    table = {"DXT_POSIX": "dxt_posix", "DXT_MPIIO": "dxt_mpiio"}.get(module, module.lower())
    assert got["rows"][table] >= got["inflated"] // size, got
    many = module == "HEATMAP" or module.startswith("DXT")
    _check_memory(got, "segment or bin rows" if many else "rows")


def _print_measurements(mib: int, only: str) -> None:
    """File size, peak memory and CPU time of each bomb of ``mib`` MiB whose name starts
    with ``only`` (the README's numbers: ``PYTHONPATH=src:tests python
    tests/darshan/test_darshan3_bombs.py 1024 zeros``)."""
    import tempfile

    bombs = [(f"zeros {m} v{v}", lambda m=m, v=v: _zero_bomb(m, v, mib)) for m, v in ZERO_BOMBS]
    bombs.append(("zeros names", lambda: _names_bomb(mib)))
    bombs += [(f"rows {m}", lambda m=m, s=s: _row_bomb(m, s, mib)[:3]) for m, s in ROW_BOMBS]
    for name, build in bombs:
        if not name.startswith(only):
            continue
        log, region, seed = build()
        with tempfile.TemporaryDirectory() as tmp:
            got = _measure(Path(tmp), log, region, seed)
        print(
            f"{name:24} file {len(dl.join(log)) / 1e6:5.2f} MB, region "
            f"{got['inflated'] / 2**20:6.0f} MiB: peak {got['peak'] / 2**20:7.0f} MiB "
            f"({got['peak'] / got['inflated']:.2f}x), CPU {got['read_s']:5.1f} s "
            f"(inflating alone {got['inflate_s']:.1f} s)",
            flush=True,
        )


if __name__ == "__main__":
    _print_measurements(int(sys.argv[1]) if len(sys.argv) > 1 else MIB, " ".join(sys.argv[2:]))
