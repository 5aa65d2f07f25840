"""The real Darshan logs that ship inside PyDarshan (``darshan``), an iosight dependency:
the demo's first data, and the logs the tests and benchmarks read."""

from __future__ import annotations

from pathlib import Path


def example_logs() -> list[Path]:
    """The real Darshan logs that ship inside the ``darshan`` package: its example logs,
    then its test inputs, each list sorted by name."""
    import darshan

    root = Path(darshan.__file__).parent
    logs = sorted((root / "examples" / "example_logs").glob("*.darshan"))
    logs += sorted((root / "tests" / "input").glob("*.darshan"))
    return logs
