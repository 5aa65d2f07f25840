"""Read commands load only what they use, so they answer a small warehouse at once.

Nothing here is timed: each command runs in a fresh interpreter and the test checks
which packages it imported (pandas and numpy alone take about 0.4 s to import).
"""

from __future__ import annotations

import pytest

from iosight.data import example_logs
from iosight.timeline import build_timeline
from iosight.warehouse import Warehouse, ingest
from tests_support import imported_modules

# the data frame, array and model libraries: what printing a query's rows never needs
HEAVY = {"pandas", "numpy", "pyarrow", "scipy", "sklearn", "xgboost", "matplotlib", "dask"}
COMMAND = "from iosight.cli import main\nmain()"


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    """One real job (PyDarshan's example.darshan) and its timeline."""
    path = tmp_path_factory.mktemp("imports") / "wh"
    log = next(p for p in example_logs() if p.name == "example.darshan")
    warehouse = Warehouse(path, create=True)
    assert ingest([log], warehouse, workers=1).ok
    build_timeline(warehouse)
    return path


READS = [
    (["jobs"], "4478544"),
    (["jobs", "--where", "nprocs > 1000", "-f", "json"], '"jobid": 4478544'),
    (["sql", "select jobid, nprocs from jobs", "-f", "csv"], "4478544,2048"),
    (["tables"], "posix"),
    (["errors", "-f", "csv"], "source_path,error"),
    (["timeline", "show"], "bin_start"),
]


@pytest.mark.parametrize(("args", "shows"), READS, ids=[" ".join(a) for a, _ in READS])
def test_read_commands_load_no_data_frame_library(wh, args, shows, tmp_path):
    result, loaded = imported_modules(COMMAND, *args, "-w", str(wh), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert shows in result.stdout  # the command did its work, not an early exit
    assert loaded.isdisjoint(HEAVY), loaded & HEAVY


def test_help_loads_no_data_library(tmp_path):
    result, loaded = imported_modules(COMMAND, "--help", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "jobs" in result.stdout
    assert loaded.isdisjoint(HEAVY | {"duckdb"}), loaded & (HEAVY | {"duckdb"})


def test_job_loads_no_reader_and_no_model_library(wh, tmp_path):
    """A job's summary of a warehouse's job reads the warehouse: the log readers (and
    ingest) load only for ``iosight job LOG``, the plotting and model libraries never
    without --plot."""
    result, loaded = imported_modules(COMMAND, "job", "4478544", "-w", str(wh), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "vpicio_uni" in result.stdout
    unused = {"iosight.warehouse._ingest", "iosight.darshan._darshan3", "iosight.darshan._sources"}
    unused |= {"scipy", "sklearn", "xgboost", "matplotlib", "dask"}
    assert loaded.isdisjoint(unused), loaded & unused


def test_schedule_start_from_a_pattern_loads_no_data_frame_library(tmp_path):
    """Algorithm 1 on a given burst pattern is numpy work; its table needs no pandas."""
    args = ["schedule", "start", "--min-time", "100", "--max-time", "200"]
    args += ["--pattern", "000110000", "--policy", "MDT"]
    result, loaded = imported_modules(COMMAND, *args, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "start options" in result.stdout
    assert loaded.isdisjoint(HEAVY - {"numpy"}), loaded & HEAVY
