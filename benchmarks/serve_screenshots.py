"""Screenshots of the ``iosight serve`` pages for the README (headless Chromium).

Jobs and Facility show the Summit 2021 warehouse (53,546 real jobs; a burst forecaster
is trained there first when it has none, so the Facility page shows the next 24 bins
and a recommended start). Job and Errors show a warehouse of PyDarshan's real example
logs (one with DXT) plus one truncated copy, so one source fails. Each page is
rendered by Debian's ``chromium --headless --screenshot`` after its scripts ran.

    python benchmarks/serve_screenshots.py --summit /tmp/summit-wh-serve --out docs/img
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]  # fmt: skip


def shoot(url: str, out: Path, size: str = "1200,860") -> Path:
    """One PNG of ``url`` after its scripts ran."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium here: apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="iosight-shot-") as profile:
        subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
             f"--screenshot={out}", url],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    print(f"{out}: {out.stat().st_size // 1024} KB")
    return out


def example_warehouse(root: Path) -> Path:
    """PyDarshan's real example logs, plus one truncated copy that fails to ingest."""
    import darshan

    from iosight.warehouse import Warehouse, ingest

    logs = sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))
    bad = root / "truncated-copy.darshan"
    bad.write_bytes(logs[0].read_bytes()[:600])
    wh = Warehouse(root / "examples-wh", create=True)
    ingest([*logs, bad], wh, workers=1)
    return wh.path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summit", type=Path, default=Path("/tmp/summit-wh-serve"))
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    args = ap.parse_args()
    from iosight.bursts import list_forecasters, train_bursts
    from iosight.serve import BackgroundServer, create_app
    from iosight.warehouse import Warehouse

    summit = Warehouse(args.summit, create=False)
    if not list_forecasters(summit):
        train_bursts(summit, directions="write", models="tree", modes="lead", horizons=[5],
                     search_iter=0, cv_splits=2, seed=0)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        examples = example_warehouse(Path(tmp))
        ex = Warehouse(examples)
        dxt = ex.sql("select job_key from jobs where source_path like '%dxt.darshan'")
        with BackgroundServer(create_app(args.summit)) as srv:
            shoot(srv.url + "/jobs?sort=bytes&dir=desc&page_size=20", args.out / "serve-jobs.png")
            shoot(srv.url + "/facility?min_time=1800&max_time=5400&policy=W3",
                  args.out / "serve-facility.png", size="1200,1500")  # fmt: skip
        with BackgroundServer(create_app(examples)) as srv:
            shoot(srv.url + f"/job/{dxt['job_key'].iloc[0]}", args.out / "serve-job.png",
                  size="1200,1400")  # fmt: skip
            shoot(srv.url + "/errors", args.out / "serve-errors.png", size="1200,400")


if __name__ == "__main__":
    main()
