"""I/O insights: iosight against Drishti on the same logs, agreement and speed, in one run.

Corpus: every Darshan 3.x log in ../shared/darshan-logs (MANIFEST.tsv format
``darshan-3.x``), including the ones a reader fails on: failures are part of the result.

* Drishti 0.8 (PyPI ``drishti-io``): ``drishti --csv --export_dir D LOG``, one process
  per log as users run it, --workers processes at a time (the same cores iosight gets);
  its CSV names every issue code it triggered.
* iosight: ``ingest`` of the same logs into a fresh warehouse (--workers processes),
  then ``compute_insights`` over it; timed separately and together.

The agreement table compares, per rule code, the logs where each tool fired it (codes
and levels are Drishti's, one level per code in both tools). Then, with --summit, the
53,546-job Summit 2021 job-total table: ingest, then insights alone (jobs/s).

    python benchmarks/insights.py --workers 2 [--limit 20] [--summit DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
LOGS = SHARED / "darshan-logs"
SUMMIT = SHARED / "datasets" / "summit_darshan_total_2021" / "darshan_total"


def corpus(limit: int) -> list[Path]:
    with open(LOGS / "MANIFEST.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["format"] == "darshan-3.x"]
    logs = [LOGS / r["filename"] for r in rows]
    return logs[:limit] if limit else logs


def drishti_command() -> list[str] | None:
    exe = Path(sys.executable).with_name("drishti")
    if exe.exists():
        return [str(exe)]
    return None


def drishti_one(cmd: list[str], log: Path, out: Path, timeout: float) -> dict:
    """Run Drishti on one log in its own process; its CSV gives the codes it triggered."""
    work = out / log.stem
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [*cmd, "--csv", "--export_dir", str(work), str(log)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=work,
            env={**os.environ, "COLUMNS": "200"},
        )
        rc, err = p.returncode, (p.stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        rc, err = -1, f"timeout after {timeout:.0f} s"
    seconds = time.perf_counter() - t0
    csvs = list(work.glob("*.csv"))
    codes = None
    if rc == 0 and csvs:
        with open(csvs[0], newline="") as fh:
            header, values = list(csv.reader(fh))[:2]
        codes = sorted(h for h, v in zip(header, values, strict=True) if v == "True")
    elif rc == 0:
        err = "no CSV written"
    return {"log": log.name, "rc": rc, "seconds": seconds, "codes": codes, "error": err[:160]}


def run_drishti(logs: list[Path], workers: int, timeout: float) -> tuple[list[dict], float]:
    cmd = drishti_command()
    if cmd is None:
        return [], 0.0
    with tempfile.TemporaryDirectory(prefix="drishti-") as tmp:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            res = list(pool.map(lambda log: drishti_one(cmd, log, Path(tmp), timeout), logs))
        return res, time.perf_counter() - t0


def run_iosight(logs: list[Path], workers: int) -> dict:
    from iosight.insights import compute_insights
    from iosight.warehouse import Warehouse, ingest

    with tempfile.TemporaryDirectory(prefix="iosight-insights-") as tmp:
        wh = Warehouse(Path(tmp) / "wh", create=True)
        t0 = time.perf_counter()
        report = ingest(logs, wh, workers=workers)
        t1 = time.perf_counter()
        run = compute_insights(wh)
        t2 = time.perf_counter()
        df = wh.sql(
            "select j.source_path, list(distinct i.code order by i.code) as codes "
            "from jobs j left join insights i using (job_key) group by 1"
        )
        codes = {
            Path(p).name: sorted(c for c in cs if c is not None)
            for p, cs in zip(df["source_path"], df["codes"], strict=True)
        }
        failed = {Path(p).name: reason for p, reason in report.errors}
    return {
        "ingest_s": t1 - t0,
        "insights_s": t2 - t1,
        "jobs": run.jobs,
        "codes": codes,
        "failed": failed,
    }


def agreement(drishti: list[dict], ios: dict) -> list[dict]:
    """Per code: logs where both fired it, only Drishti, only iosight (logs both read)."""
    both_read = [d for d in drishti if d["codes"] is not None and d["log"] in ios["codes"]]
    codes = sorted(
        {c for d in both_read for c in d["codes"]}
        | {c for d in both_read for c in ios["codes"][d["log"]]}
    )
    rows = []
    for code in codes:
        dr = {d["log"] for d in both_read if code in d["codes"]}
        io = {d["log"] for d in both_read if code in ios["codes"][d["log"]]}
        rows.append(
            {
                "code": code,
                "both": len(dr & io),
                "drishti_only": len(dr - io),
                "iosight_only": len(io - dr),
                "agree": (len(both_read) - len(dr ^ io)) / max(len(both_read), 1),
            }
        )
    return rows


def summit(workers: int) -> dict | None:
    if not SUMMIT.exists():
        return None
    from iosight.insights import compute_insights
    from iosight.warehouse import Warehouse, ingest

    with tempfile.TemporaryDirectory(prefix="iosight-summit-") as tmp:
        wh = Warehouse(Path(tmp) / "wh", create=True)
        t0 = time.perf_counter()
        ingest([SUMMIT], wh, workers=workers)
        t1 = time.perf_counter()
        run = compute_insights(wh)
        t2 = time.perf_counter()
        again = compute_insights(wh)
        return {
            "jobs": run.jobs,
            "findings": run.findings,
            "ingest_s": t1 - t0,
            "insights_s": t2 - t1,
            "rerun_s": again.seconds,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N logs")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per Drishti run")
    ap.add_argument("--no-summit", action="store_true")
    ap.add_argument("--json", type=Path, help="write every per-log result here")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    logs = corpus(args.limit)
    drishti, dr_wall = run_drishti(logs, args.workers, args.timeout)
    ios = run_iosight(logs, args.workers)
    print(f"load average after the shared logs: {os.getloadavg()}")
    n = len(logs)
    print(f"\n{n} Darshan 3.x logs, {args.workers} processes at a time for both tools")
    if drishti:
        ok = [d for d in drishti if d["codes"] is not None]
        print(
            f"Drishti: {len(ok)} logs read, {n - len(ok)} failed; {dr_wall:.1f} s wall, "
            f"{n / dr_wall:.2f} logs/s"
        )
    else:
        print("Drishti: not installed (pip install drishti-io); no comparison")
    io_wall = ios["ingest_s"] + ios["insights_s"]
    print(
        f"iosight: {len(ios['codes'])} logs read, {len(ios['failed'])} failed; ingest "
        f"{ios['ingest_s']:.1f} s + insights {ios['insights_s']:.2f} s = {io_wall:.1f} s, "
        f"{n / io_wall:.2f} logs/s end to end; insights alone "
        f"{ios['jobs'] / ios['insights_s']:.0f} jobs/s"
    )
    if drishti:
        print(
            f"ratio (Drishti wall / iosight end-to-end wall): {dr_wall / io_wall:.1f}x; "
            f"insights alone: {dr_wall / ios['insights_s']:.0f}x"
        )
        print("\n| code | both | Drishti only | iosight only | agreement |")
        print("|---|---|---|---|---|")
        for r in agreement(drishti, ios):
            print(
                f"| {r['code']} | {r['both']} | {r['drishti_only']} | {r['iosight_only']} | "
                f"{100 * r['agree']:.0f}% |"
            )
        print("\nDrishti failures:")
        for d in drishti:
            if d["codes"] is None:
                other = ios["failed"].get(d["log"])
                other = f"failed: {other[-80:]}" if other else "read"
                print(f"- {d['log'][:90]}: {d['error']}  (iosight: {other})")
    if not args.no_summit:
        s = summit(args.workers)
        if s:
            print(
                f"\nSummit 2021 job totals: {s['jobs']} jobs, {s['findings']} findings; ingest "
                f"{s['ingest_s']:.1f} s, insights {s['insights_s']:.2f} s "
                f"({s['jobs'] / s['insights_s']:.0f} jobs/s); re-run with nothing new "
                f"{s['rerun_s']:.2f} s"
            )
    print(f"load average at the end: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps({"drishti": drishti, "iosight": ios}, indent=1))


if __name__ == "__main__":
    main()
