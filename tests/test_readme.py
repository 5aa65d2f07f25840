"""Every ``bash`` block of the README runs, in order, as a new user would run it, and
every ``python`` block runs on its own, as pasted into a fresh notebook.

The commands run in a fresh folder, as subprocesses of this Python (``python -m
iosight``); each data source has its own warehouse there, as the README gives it.
``iosight data fetch`` reads ``../shared/datasets`` through a local HTTP server
(``$IOSIGHT_DATA_URL``), so the test needs ``../shared`` and skips without it. What the
README leaves to the reader gets a real value from ``PLACEHOLDERS`` (evaluated when the
command runs, so a job id can come from the warehouse the earlier commands built) and a
few options are made smaller by ``FASTER`` to keep CI short; both tables are the whole
list. Set-up commands (``pip install``, the test suite, ruff) are not re-run. A block
after ``<!-- readme-test: skip (why) -->`` is not run. What the workflows produce is then
checked: no SYNTHETIC label on real data, similar jobs only from the query's own source,
timelines without negative bytes or bytes in idle bins, burst thresholds above zero.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from data_server import serve
from tests_support import SHARED, free_port

README = Path(__file__).resolve().parents[1] / "README.md"
SKIP_MARK = "<!-- readme-test: skip"
SETUP = ("pip ", "python -m pytest", "ruff ")  # the environment, not a workflow
SERVER = "iosight serve"  # started, asked for its first page, stopped

Resolve = Callable[[Path], str]


def _from_warehouse(name: str, query: str) -> Resolve:
    def resolve(cwd: Path) -> str:
        from iosight.warehouse import Warehouse

        return str(Warehouse(cwd / name).sql(query).iloc[0, 0])

    return resolve


#: placeholder in the README -> its value in the test
PLACEHOLDERS: dict[str, Resolve] = {
    # the example logs, copied there (an absolute path: python blocks run elsewhere)
    "/archive/darshan/2024/": lambda cwd: f"{cwd / 'logs'}/",
    "similarity find JOB": _from_warehouse(
        "logs-wh",
        "select 'similarity find ' || job_key from sim_codings "
        "where coding = 'bin-aggzeros' and not zero order by job_key limit 1",
    ),
    "iosight job 1304": lambda cwd: "iosight job 32324925",  # a job of the example logs
}
#: options made smaller so that the whole README runs in minutes on 2 cores
FASTER = {
    # hourly bins and one model at one lead keep training on a year of Summit short
    "--bin 5min": "--bin 1h",
    "iosight bursts train --warehouse summit-wh/": (
        "iosight bursts train --warehouse summit-wh/ --models logreg --horizons 60"
    ),
    "--months 6": "--months 1",
    "--loads 0.1:1.5:0.1": "--loads 0.5:1.0:0.5",
    "--sets 100": "--sets 3",
    # ... and the scheduling simulation then uses the same hourly bins
    "--app c:1830:3660 --out": "--app c:1830:3660 --bin 3600 --out",
}
#: README lines that fail today, each with why; the test fails if one starts passing
KNOWN_FAILURES: dict[str, str] = {}
TRAIN_PY = "import numpy as np\nnp.save('weights.npy', np.arange(1000))\nprint('trained')\n"


#: the warehouses of real data the README builds, and the SYNTHETIC one
REAL_WAREHOUSES = ("aiio-wh/", "logs-wh/", "summit-wh/", "dkrz-wh/", "traced-wh/")
TIMELINES = ("logs-wh", "summit-wh", "synth-wh")
THRESHOLDS = ("summit-wh", "synth-wh")  # logs-wh: too few jobs for a threshold


def code_blocks(text: str, language: str = "bash") -> list[list[str]]:
    """The README's blocks of ``language``, as lists of lines, without skipped blocks."""
    blocks, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != f"```{language}":
            continue
        end = lines.index("```", i + 1)
        if i > 0 and lines[i - 1].startswith(SKIP_MARK):
            continue
        blocks.append([c for c in lines[i + 1 : end] if c.strip()])
    return blocks


def prepared(line: str, cwd: Path) -> str:
    """One README line with placeholders filled and options shrunk."""
    for text, value in PLACEHOLDERS.items():
        if text in line:
            line = line.replace(text, value(cwd))
    for text, value in FASTER.items():
        line = line.replace(text, value)
    return line


def shims(folder: Path) -> Path:
    """``iosight`` and ``python`` on PATH as this test's Python, so lines run as written."""
    folder.mkdir()
    script = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m iosight "$@"\n'
    (folder / "iosight").write_text(script)
    (folder / "iosight").chmod(0o755)
    (folder / "python").symlink_to(sys.executable)
    return folder


def run_server(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """``iosight serve``: start it on a free port, fetch its first page, stop it."""
    port = free_port()
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command} --port {port}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(240):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    code = 0 if r.status == 200 else r.status
                    break
            except OSError:
                if proc.poll() is not None:
                    code = proc.returncode or 1
                    break
                time.sleep(0.5)
        else:
            code = 124
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(command, code, "", err)


def test_bash_blocks_are_found_and_skips_are_marked():
    blocks = code_blocks(README.read_text())
    commands = [c for b in blocks for c in b]
    assert sum(c.startswith("iosight ") for c in commands) >= 30
    assert not any("--scheduler tcp://" in c for c in commands)  # marked: needs a cluster
    assert any(c.startswith("iosight data fetch") for c in commands)
    python = code_blocks(README.read_text(), "python")
    assert python and not any("SLURMCluster" in c for b in python for c in b)  # marked too


@dataclass
class ReadmeRun:
    """What running the README gave: the folder, the lines that ran and failed (with the
    last line of stderr, or the traceback), and each line's stdout and stderr."""

    cwd: Path
    ran: list[str] = field(default_factory=list)
    failed: dict[str, list[str]] = field(default_factory=dict)
    tracebacks: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def record(self, line: str, command: str, done: subprocess.CompletedProcess) -> None:
        self.outputs[line] = done.stdout + done.stderr
        if "Traceback" in done.stderr:
            self.tracebacks[line] = done.stderr[-3000:]
        # ingest exits 2 when some sources could not be read: that is its report
        if done.returncode == 0 or (done.returncode == 2 and " ingest " in command):
            self.ran.append(line)
        else:
            self.failed[line] = done.stderr.strip().splitlines()[-1:]


def _environment(root: Path) -> dict[str, str]:
    src = Path(__file__).resolve().parents[1] / "src"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
        "IOSIGHT_DATA": str(root / "data"),
        "PATH": os.pathsep.join([str(shims(root / "bin")), os.environ["PATH"]]),
    }
    env.pop("IOSIGHT_WAREHOUSE", None)
    return env


def _run(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def _run_bash(run: ReadmeRun, env: dict) -> None:
    for block in code_blocks(README.read_text()):
        for line in block:
            if line.startswith(SETUP):
                continue
            command = prepared(line, run.cwd)
            t0 = time.monotonic()
            if command.startswith(SERVER):
                done = run_server(command.split("#")[0].strip(), run.cwd, env)
            else:
                done = _run(["bash", "-o", "pipefail", "-c", command], run.cwd, env)
            print(f"{time.monotonic() - t0:6.1f} s rc={done.returncode} {command}")
            run.record(line, command, done)


def _run_python(run: ReadmeRun, env: dict) -> None:
    """Each python block alone, in a folder of its own (nothing the bash blocks built)."""
    for i, block in enumerate(code_blocks(README.read_text(), "python")):
        code = prepared("\n".join(block), run.cwd)
        folder = run.cwd.parent / f"python-{i}"
        folder.mkdir()
        (folder / "block.py").write_text(code + "\n")
        t0 = time.monotonic()
        done = _run([sys.executable, "block.py"], folder, env)
        print(f"{time.monotonic() - t0:6.1f} s rc={done.returncode} python block {i}")
        run.record(f"python block {i}: {block[0]}", "python", done)


@pytest.fixture(scope="module")
def readme(tmp_path_factory) -> ReadmeRun:
    """The README run once, for the tests below."""
    from iosight.data import example_logs

    datasets = SHARED / "datasets"
    if not datasets.exists():
        pytest.skip(f"{datasets} not present (../shared is only beside CI and dev checkouts)")
    root = tmp_path_factory.mktemp("readme")
    run = ReadmeRun(root / "work")
    (run.cwd / "logs").mkdir(parents=True)
    for log in example_logs():
        shutil.copy(log, run.cwd / "logs" / log.name)
    (run.cwd / "train.py").write_text(TRAIN_PY)
    env = _environment(root)
    with serve(datasets) as url:
        env["IOSIGHT_DATA_URL"] = url
        _run_bash(run, env)
    _run_python(run, env)
    return run


@pytest.mark.slow
def test_readme_commands_run_in_order(readme):
    assert readme.tracebacks == {}
    known = {line: why for line, why in KNOWN_FAILURES.items() if line in readme.failed}
    assert set(readme.failed) == set(known), (
        f"failed: {readme.failed}; known failures that now pass (remove them): "
        f"{set(KNOWN_FAILURES) - set(readme.failed)}"
    )
    assert len(readme.ran) >= 30
    # five reports share report/: each keeps its page, and the index links them all
    index = (readme.cwd / "report" / "index.html").read_text()
    for name in ("bursts", "schedule", "similarity", "perfmodel", "iosched"):
        assert f"href='{name}.html'" in index


@pytest.mark.slow
def test_readme_never_labels_real_data_synthetic(readme):
    on_real = {
        line: out
        for line, out in readme.outputs.items()
        if any(w in line for w in REAL_WAREHOUSES) and "synth-wh/" not in line
    }
    assert len(on_real) >= 25
    assert [line for line, out in on_real.items() if "SYNTHETIC" in out] == []
    for page in ("report/schedule.html", "report/similarity.html", "out/insights.html"):
        assert "SYNTHETIC" not in (readme.cwd / page).read_text(), page


@pytest.mark.slow
def test_readme_similar_jobs_come_from_the_querys_own_source(readme):
    from iosight.similarity import find_similar
    from iosight.warehouse import Warehouse

    (line,) = [line for line in readme.outputs if line.startswith("iosight similarity find")]
    assert "dkrz:" not in readme.outputs[line]
    wh = Warehouse(readme.cwd / "logs-wh")
    job = prepared("similarity find JOB", readme.cwd).split()[-1]
    sources = dict(wh.sql("select job_key, source from sim_jobs").values)
    found = find_similar(wh, job, top=20)
    assert len(found) and {sources[k] for k in found["job_key"]} == {sources[job]}


@pytest.mark.slow
def test_readme_timelines_hold_no_negative_or_idle_bytes(readme):
    from iosight.timeline import VALUE_COLUMNS, load_timeline
    from iosight.warehouse import Warehouse

    for name in TIMELINES:
        df = load_timeline(Warehouse(readme.cwd / name))
        values = df[list(VALUE_COLUMNS)]
        assert (values >= 0).all().all(), f"{name}: negative bin values"
        idle = values[df["active_jobs"] == 0]
        assert (idle == 0).all().all(), f"{name}: {int((idle != 0).any(axis=1).sum())} idle bins"


@pytest.mark.slow
def test_readme_burst_thresholds_are_above_zero(readme):
    from iosight._errors import IosightError
    from iosight.bursts import analyze_bursts
    from iosight.timeline import load_timeline
    from iosight.warehouse import Warehouse

    for name in THRESHOLDS:
        summary = analyze_bursts(load_timeline(Warehouse(readme.cwd / name))).summary
        assert (summary["threshold"] > 0).all(), f"{name}:\n{summary}"
    # a few logs' timeline is nearly all empty bins: no threshold, a refusal saying why
    with pytest.raises(IosightError, match="empty"):
        analyze_bursts(load_timeline(Warehouse(readme.cwd / "logs-wh")))
