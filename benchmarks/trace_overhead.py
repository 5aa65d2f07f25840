"""Overhead of iosight tracing on I/O-heavy Python workloads, traced vs untraced.

Each workload runs in a fresh interpreter, untraced and traced (``iosight trace``'s
sitecustomize activation), alternating which goes first, ``--repeats`` times; the
workload times its own I/O loop (wall clock and process CPU time, which includes the
tracer's background thread) and prints a checksum of what it read. The script prints
the medians, the slowdowns and whether the traced program's output was identical.
On a shared, noisy machine the CPU-time slowdown is the steadier of the two; the
``noise`` column is the untraced wall times' (max - min) / median.

Each workload waits ``--settle`` seconds after start-up before its timed loop, so that
one-off start-up work is not charged to the I/O calls: the tracer imports numpy, and
numpy's OpenBLAS starts a worker thread that spins for about 50 ms of CPU after the
import even when no BLAS call is ever made (``python -c "import numpy"`` followed by
0.3 s of sleep uses 0.05 s of CPU on the dev VM). Start-up costs are the last line.

    python benchmarks/trace_overhead.py            # 256 MiB per large workload
    python benchmarks/trace_overhead.py --quick    # < 60 s
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

WORKLOAD = textwrap.dedent(
    """
    import json, os, sys, time, zlib
    kind, size, total, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    time.sleep(float(sys.argv[5]))  # let start-up work (imports, BLAS threads) settle
    block = bytes(range(256)) * (size // 256) + bytes(size % 256)
    n = total // size
    crc = 0
    t, cpu = time.perf_counter(), time.process_time()
    if kind == "posix":
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        for _ in range(n):
            os.write(fd, block)
        os.close(fd)
        fd = os.open(path, os.O_RDONLY)
        for _ in range(n):
            crc = zlib.crc32(os.read(fd, size)[:64], crc)
        os.close(fd)
    else:
        with open(path, "wb") as f:
            for _ in range(n):
                f.write(block)
        with open(path, "rb") as f:
            for _ in range(n):
                crc = zlib.crc32(f.read(size)[:64], crc)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    os.unlink(path)
    print(json.dumps({"elapsed": elapsed, "cpu": cpu, "crc": crc, "ops": 2 * n}))
    """
)


def _run(script: Path, args: list[str], env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, str(script), *args], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 repeats (< 60 s)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--settle",
        type=float,
        default=0.5,
        help="seconds each workload waits after start-up before its timed loop (default 0.5)",
    )
    parser.add_argument(
        "--dir",
        default=None,
        help="where the workload writes (default: tmp). Darshan's excluded prefixes (/dev/, "
        "/var/, ...) are not traced: for tmpfs use a symlink elsewhere to /dev/shm",
    )
    args = parser.parse_args(argv)
    from iosight.trace import trace_env

    repeats = 3 if args.quick else args.repeats
    large_total = (64 if args.quick else 256) << 20
    small_total = (16 if args.quick else 64) << 20
    cases = [
        ("posix", 4 << 20, large_total, "large 4 MiB os.write/os.read"),
        ("stdio", 4 << 20, large_total, "large 4 MiB file.write/file.read"),
        ("posix", 4096, small_total, "4 KiB os.write/os.read"),
        ("stdio", 4096, small_total, "4 KiB file.write/file.read"),
    ]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmp = Path(tmp)
        script = tmp / "workload.py"
        script.write_text(WORKLOAD)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("IOSIGHT_TRACE")}
        print(
            f"{'workload':34s} {'ops':>6s} {'wall s':>7s} {'traced':>7s} {'slowdown':>8s}"
            f" {'cpu s':>7s} {'traced':>7s} {'slowdown':>8s} {'noise':>6s}  output  recorded"
        )
        cpu_of = {}  # (kind, size) -> (ops, untraced cpu s, traced cpu s), medians
        for case, (kind, size, total, label) in enumerate(cases):
            logs = tmp / f"logs{case}"
            traced_env = {**base_env, **trace_env(logs, {})}
            wargs = [kind, str(size), str(total), str(tmp / "data.bin"), str(args.settle)]
            plain, traced = [], []
            for i in range(repeats):  # alternate which side runs first
                for side in ((plain, base_env), (traced, traced_env))[:: 1 if i % 2 else -1]:
                    side[0].append(_run(script, wargs, side[1]))
            same = {r["crc"] for r in plain} == {r["crc"] for r in traced}
            line = f"{label:34s} {plain[0]['ops']:6d}"
            for key in ("elapsed", "cpu"):
                tp = statistics.median(r[key] for r in plain)
                tt = statistics.median(r[key] for r in traced)
                line += f" {tp:7.3f} {tt:7.3f} {100 * (tt / tp - 1):+7.1f}%"
            cpu_of[kind, size] = (plain[0]["ops"], tp, tt)  # tp, tt: the cpu medians
            walls = [r["elapsed"] for r in plain]  # run-to-run spread of the untraced side
            noise = (max(walls) - min(walls)) / statistics.median(walls)
            recorded = _recorded_ops(logs, kind.upper(), tmp / "data.bin")
            rec = f"{min(recorded)}/{plain[0]['ops']}" if recorded else "none"
            print(f"{line} {100 * noise:5.0f}%  {'unchanged' if same else 'CHANGED':9s} {rec}")
        print("recorded: fewest reads+writes one traced run's log holds for the data file")
        for kind in ("posix", "stdio"):  # the large rows' figures are within their noise
            ops, tp, tt = cpu_of[kind, 4096]
            per_call = (tt - tp) / ops
            big_ops, big_tp, _ = cpu_of[kind, 4 << 20]
            print(
                f"{kind}: tracing adds {per_call * 1e6:.2f} us of CPU per call (4 KiB rows),"
                f" which is {100 * per_call * big_ops / big_tp:+.2f}% of the large row's CPU"
            )
        starts = {}
        for name, env in (("untraced", base_env), ("traced", {**base_env, **trace_env(tmp, {})})):
            times, cpus = [], []
            for _ in range(repeats):
                t, c = time.perf_counter(), _children_cpu()
                subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
                times.append(time.perf_counter() - t)
                cpus.append(_children_cpu() - c)
            starts[name] = statistics.median(times), statistics.median(cpus)
        (wu, cu), (wt, ct) = starts["untraced"], starts["traced"]
        print(
            f"interpreter start-up and exit (python -c pass): {wu:.3f} s untraced,"
            f" {wt:.3f} s traced (cpu {cu:.3f} s, {ct:.3f} s)"
        )


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _recorded_ops(log_dir: Path, module: str, data: Path) -> list[int]:
    """Reads + writes of ``data`` in each traced run's log (proof the tracer was recording:
    a directory under Darshan's excluded prefixes such as /dev/shm would record nothing)."""
    from iosight.trace import darshan_hash, read_log

    rid = darshan_hash(str(data))
    out = []
    for path in sorted(log_dir.glob("*.darshan")):
        recs = read_log(path).records.get(module)
        n = 0
        if recs is not None:
            for rec in recs[recs["id"] == rid]:
                n += int(rec["counters"][3 if module == "POSIX" else 2])  # READS
                n += int(rec["counters"][4 if module == "POSIX" else 3])  # WRITES
        out.append(n)
    return out


if __name__ == "__main__":
    main()
