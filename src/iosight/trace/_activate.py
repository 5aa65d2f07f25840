"""Activating the tracer in an unchanged Python program, from environment variables.

``iosight trace -- python prog.py`` puts ``_bootstrap/`` (holding a ``sitecustomize``)
first on ``PYTHONPATH`` and describes the trace in ``IOSIGHT_TRACE_*`` variables; the
child interpreter imports ``sitecustomize`` at start-up, which calls
:func:`activate_from_env`. ``python -m iosight.trace.run prog.py`` does the same in
one process. The variables are removed once read, so programs the traced program
starts in turn are not traced (their rank would collide with their parent's).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from iosight._errors import IosightError
from iosight.trace._core import TraceConfig
from iosight.trace._session import Tracer

ENV_LOG_DIR = "IOSIGHT_TRACE_LOG_DIR"
ENV_OPTIONS = "IOSIGHT_TRACE_OPTIONS"  # JSON object of TraceConfig fields
ENV_REPORT = "IOSIGHT_TRACE_REPORT"  # a file where the child writes what it logged
BOOTSTRAP_DIR = Path(__file__).with_name("_bootstrap")

_ACTIVE: Tracer | None = None


def trace_env(log_dir: Path, options: dict, report: Path | None = None) -> dict[str, str]:
    """The environment variables that make a child Python process trace itself.

    ``log_dir``: where the logs go; ``options``: :class:`TraceConfig` fields, as JSON;
    ``report``: a file the child writes what it traced into.
    """
    import iosight

    src = str(Path(iosight.__file__).resolve().parents[1])
    path = [str(BOOTSTRAP_DIR), src, *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {
        ENV_LOG_DIR: str(Path(log_dir).resolve()),
        ENV_OPTIONS: json.dumps(options),
        "PYTHONPATH": os.pathsep.join(path),
    }
    if report is not None:
        env[ENV_REPORT] = str(report)
    return env


def activate_from_env() -> Tracer | None:
    """Start tracing this process if ``IOSIGHT_TRACE_LOG_DIR`` is set (once per process)."""
    global _ACTIVE
    log_dir = os.environ.pop(ENV_LOG_DIR, None)
    options = json.loads(os.environ.pop(ENV_OPTIONS, "{}") or "{}")
    report = os.environ.pop(ENV_REPORT, None)
    _drop_bootstrap_from_pythonpath()
    if log_dir is None or _ACTIVE is not None:
        return _ACTIVE
    if "modules" in options:
        options["modules"] = tuple(options["modules"])
    if "exclude" in options:
        options["exclude"] = tuple(options["exclude"])
    try:
        config = TraceConfig(log_dir=Path(log_dir), **options)
    except TypeError as err:
        raise IosightError(f"bad {ENV_OPTIONS}: {err}") from None
    _ACTIVE = Tracer(config).start(at_exit=True)
    if report:
        import atexit

        atexit.register(_write_report, _ACTIVE, report)  # runs before finish (LIFO)…
    return _ACTIVE


def _write_report(tracer: Tracer, report: str) -> None:
    res = tracer.finish()  # …so finish here first; the atexit finish is then a no-op
    out = {
        "log": str(res.log) if res.log else None,
        "partial": str(res.partial) if res.partial else None,
        "records": res.records,
        "dropped": res.dropped,
    }
    Path(report).write_text(json.dumps(out))


def _drop_bootstrap_from_pythonpath() -> None:
    parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [p for p in parts if p and Path(p) != BOOTSTRAP_DIR]
    if kept:
        os.environ["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        os.environ.pop("PYTHONPATH", None)


def run_traced(
    program: list[str], log_dir: str | Path, *, env: dict[str, str] | None = None, **options
) -> tuple[int, dict | None]:
    """Run ``program`` (a command line starting a Python interpreter) with tracing on.

    Returns the program's exit status (128 + signal number when a signal ended it) and
    what its traced interpreter reported writing (None when it wrote nothing, e.g. it
    was killed; its state file is then left for ``recover``). ``env`` adds variables
    (e.g. a launcher's rank variables); ``options`` are TraceConfig fields.

    ``log_dir``: where the logs go.
    """
    import subprocess
    import tempfile

    if not program:
        raise IosightError("no program to trace; usage: iosight trace -- python prog.py [args]")
    from iosight.trace._core import validate

    validate(TraceConfig(log_dir=Path(log_dir), **options))
    log_dir = Path(log_dir)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise IosightError(f"cannot create log directory {log_dir}: {err.strerror}") from None
    with tempfile.TemporaryDirectory(prefix="iosight-trace-") as tmp:
        report = Path(tmp) / "report.json"
        full_env = {**os.environ, **(env or {}), **trace_env(log_dir, options, report)}
        try:
            code = subprocess.run(program, env=full_env, check=False).returncode
        except FileNotFoundError:
            raise IosightError(f"cannot run {program[0]!r}: no such program") from None
        result = json.loads(report.read_text()) if report.exists() else None
    return (128 - code if code < 0 else code), result
