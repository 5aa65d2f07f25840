"""Every ``bash`` block of the README runs, in order, as a new user would run it.

The commands run in a fresh folder with a fresh warehouse (``wh/``), as subprocesses of
this Python (``python -m iosight``). ``iosight data fetch`` reads ``../shared/datasets``
through a local HTTP server (``$IOSIGHT_DATA_URL``), so the test needs ``../shared`` and
skips without it. What the README leaves to the reader gets a real value from
``PLACEHOLDERS`` (evaluated when the command runs, so a job id can come from the
warehouse the earlier commands built) and a few options are made smaller by ``FASTER``
to keep CI short; both tables are the whole list. Set-up commands (``pip install``, the
test suite, ruff) are not re-run. A block after ``<!-- readme-test: skip (why) -->`` is
not run.
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
from pathlib import Path

import pytest

from data_server import serve
from tests_support import free_port

README = Path(__file__).resolve().parents[1] / "README.md"
SKIP_MARK = "<!-- readme-test: skip"
SETUP = ("pip ", "python -m pytest", "ruff ")  # the environment, not a workflow
SERVER = "iosight serve"  # started, asked for its first page, stopped

Resolve = Callable[[Path], str]


def _from_warehouse(query: str) -> Resolve:
    def resolve(cwd: Path) -> str:
        from iosight.warehouse import Warehouse

        return str(Warehouse(cwd / "wh", create=False).sql(query).iloc[0, 0])

    return resolve


#: placeholder in the README -> its value in the test
PLACEHOLDERS: dict[str, Resolve] = {
    "/archive/darshan/2024/": lambda cwd: "logs/",  # the example logs, copied there
    "similarity find JOB": _from_warehouse(
        "select 'similarity find ' || job_key from sim_codings "
        "where coding = 'bin-aggzeros' and not zero order by job_key limit 1"
    ),
    "docs/examples/": lambda cwd: f"{README.parent}/docs/examples/",  # run from the checkout
    "cori-....csv.gz": lambda cwd: "cori-summaries_2017-02-14-2018-02-15.csv.gz",
    # a time inside the test warehouse's timeline (the README's date is an example)
    '--at "2024-03-01 12:00"': _from_warehouse(
        "select '--at \"' || strftime(to_timestamp(max(bin_start) - 86400), '%Y-%m-%d %H:%M')"
        " || '\"' from timeline"
    ),
    "iosight job 1304": lambda cwd: "iosight job 32324925",  # a job of the example logs
}
#: options made smaller so that the whole README runs in minutes on 2 cores
FASTER = {
    # the example logs span 2017-2023: 615,009 five-minute bins (nearly all empty), on
    # which training takes many minutes on 2 cores; hourly bins keep it under a minute
    "--bin 5min": "--bin 1h",
    "iosight bursts train --warehouse wh/": (
        "iosight bursts train --warehouse wh/ --models logreg --horizons 60"
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


def bash_blocks(text: str) -> list[list[str]]:
    """The README's bash blocks, as lists of command lines, without skipped blocks."""
    blocks, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != "```bash":
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
    blocks = bash_blocks(README.read_text())
    commands = [c for b in blocks for c in b]
    assert sum(c.startswith("iosight ") for c in commands) >= 30
    assert not any("--scheduler tcp://" in c for c in commands)  # marked: needs a cluster
    assert any(c.startswith("iosight data fetch") for c in commands)


@pytest.mark.slow
def test_readme_commands_run_in_order(shared, tmp_path):
    from iosight.demo.step_10_characterization import example_logs

    datasets = shared("datasets")
    cwd = tmp_path / "work"
    (cwd / "logs").mkdir(parents=True)
    for log in example_logs():
        shutil.copy(log, cwd / "logs" / log.name)
    (cwd / "train.py").write_text(TRAIN_PY)
    src = Path(__file__).resolve().parents[1] / "src"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
        "IOSIGHT_DATA": str(tmp_path / "data"),
        "PATH": os.pathsep.join([str(shims(tmp_path / "bin")), os.environ["PATH"]]),
    }
    env.pop("IOSIGHT_WAREHOUSE", None)
    ran, failed = [], {}
    with serve(datasets) as url:
        env["IOSIGHT_DATA_URL"] = url
        for block in bash_blocks(README.read_text()):
            for line in block:
                if line.startswith(SETUP):
                    continue
                command = prepared(line, cwd)
                t0 = time.monotonic()
                if command.startswith(SERVER):
                    done = run_server(command.split("#")[0].strip(), cwd, env)
                else:
                    done = subprocess.run(
                        ["bash", "-o", "pipefail", "-c", command],
                        cwd=cwd,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=600,
                        check=False,
                    )
                print(f"{time.monotonic() - t0:6.1f} s rc={done.returncode} {command}")
                assert "Traceback" not in done.stderr, f"{line}\n{done.stderr[-3000:]}"
                # ingest exits 2 when some sources could not be read: that is its report
                if done.returncode == 0 or (done.returncode == 2 and " ingest " in command):
                    ran.append(line)
                else:
                    failed[line] = done.stderr.strip().splitlines()[-1:]
    known = {line: why for line, why in KNOWN_FAILURES.items() if line in failed}
    assert set(failed) == set(known), (
        f"failed: {failed}; known failures that now pass (remove them): "
        f"{set(KNOWN_FAILURES) - set(failed)}"
    )
    assert len(ran) >= 30
    # five reports share report/: each keeps its page, and the index links them all
    index = (cwd / "report" / "index.html").read_text()
    for name in ("bursts", "schedule", "similarity", "perfmodel", "iosched"):
        assert f"href='{name}.html'" in index
