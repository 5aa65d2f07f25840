"""Read commands load only what they use, so they answer a small warehouse at once.

Nothing here is timed: each command runs in a fresh interpreter and the test checks
which packages it imported (pandas and numpy alone take about 0.4 s to import), and
that it imported no command module but its own (commands register lazily). Pydantic
is no exception here: Typer coerces every option's value through it.
"""

from __future__ import annotations

import importlib

import pytest
import typer

from iosight.cli import WAREHOUSE_COMMANDS, build_app, command_modules, module_of
from iosight.data import example_logs
from iosight.timeline import build_timeline
from iosight.warehouse import Warehouse, ingest
from tests_support import imported_modules

# the data frame, array and model libraries: what printing a query's rows never needs
HEAVY = {"pandas", "numpy", "pyarrow", "scipy", "sklearn", "xgboost", "matplotlib", "dask"}
# what no read command needs: the model, plotting and cluster libraries, PyDarshan
UNUSED = {"scipy", "sklearn", "xgboost", "matplotlib", "dask", "darshan"}
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
    assert other_commands(loaded, args[0]) == set()


def other_commands(loaded: set[str], command: str) -> set[str]:
    """The command modules in ``loaded`` that are not ``command``'s."""
    own = {"iosight.cli", "iosight.cli._common", f"iosight.cli.{module_of(command)}"}
    return {m for m in loaded if m.startswith("iosight.cli") and m not in own}


def test_insights_loads_no_model_plotting_or_reader_library(wh, tmp_path):
    """The rules are numpy work over the warehouse and the facility view prints plain
    rows: no pandas; the figures (and their DataFrames) only with --report."""
    import shutil

    copy = shutil.copytree(wh, tmp_path / "wh")  # it stores insights: wh stays without
    result, loaded = imported_modules(COMMAND, "insights", "-w", str(copy), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "insights over 1 jobs" in result.stdout
    assert loaded.isdisjoint(UNUSED | {"pandas"}), loaded & (UNUSED | {"pandas"})
    assert other_commands(loaded, "insights") == set()


def test_each_command_is_found_in_the_module_that_registers_it():
    """The lazy lookup (:func:`iosight.cli.module_of`) agrees with what each module
    registers, so ``iosight X`` never misses its command or loads another module."""
    registered = {}
    for name in command_modules():
        app = typer.Typer()
        app.callback()(lambda: None)  # a group, even of one command
        importlib.import_module(f"iosight.cli.{name}").register(app)
        registered |= dict.fromkeys(typer.main.get_command(app).commands, name)
    assert {c for c, m in registered.items() if m == "warehouse"} == WAREHOUSE_COMMANDS
    assert {c: module_of(c) for c in registered} == registered
    assert module_of("jbos") is None  # a typo: every command registers, Click suggests
    assert set(typer.main.get_command(build_app(["jbos"])).commands) == set(registered)


def test_help_loads_no_data_library(tmp_path):
    result, loaded = imported_modules(COMMAND, "--help", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "jobs" in result.stdout
    assert {"timeline", "similarity", "compact"} <= set(result.stdout.split())  # every one
    assert loaded.isdisjoint(HEAVY | {"duckdb"}), loaded & (HEAVY | {"duckdb"})


def test_job_loads_no_reader_and_no_model_library(wh, tmp_path):
    """A job's summary of a warehouse's job reads the warehouse: the log readers (and
    ingest) load only for ``iosight job LOG``, the plotting and model libraries never
    without --plot. Its insights, not stored here, are evaluated by the rules on numpy
    columns: neither pandas nor pyarrow."""
    result, loaded = imported_modules(COMMAND, "job", "4478544", "-w", str(wh), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "vpicio_uni" in result.stdout
    unused = {"iosight.warehouse._ingest", "iosight.darshan._darshan3", "iosight.darshan._sources"}
    unused |= UNUSED | {"pandas", "pyarrow"}
    assert "iosight.insights._evaluate" in loaded  # evaluated now: nothing was stored
    assert loaded.isdisjoint(unused), loaded & unused
    assert other_commands(loaded, "job") == set()


@pytest.fixture(scope="module")
def insights_wh(wh, tmp_path_factory):
    """:func:`wh` with its job's insights stored (``iosight insights``)."""
    import shutil

    from iosight.insights import compute_insights

    path = shutil.copytree(wh, tmp_path_factory.mktemp("stored") / "wh")
    assert compute_insights(Warehouse(path)).jobs == 1  # evaluated now, or already
    return path


def test_insights_with_no_new_job_loads_neither_the_rules_nor_numpy(insights_wh, tmp_path):
    """Where every job's insights are stored, ``iosight insights`` evaluates nothing: it
    prints the facility view from plain rows, the rules' titles from the stored rules
    table, without importing the rules or numpy."""
    import shutil

    copy = shutil.copytree(insights_wh, tmp_path / "wh")
    result, loaded = imported_modules(COMMAND, "insights", "-w", str(copy), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "0 evaluated now" in result.stdout and "insights over 1 jobs" in result.stdout
    assert "misaligned file requests" in result.stdout  # P08's title, from the stored table
    rules = {"iosight.insights._evaluate", "iosight.insights._registered"}
    assert loaded.isdisjoint(HEAVY | rules), loaded & (HEAVY | rules)
    assert other_commands(loaded, "insights") == set()


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_job_with_stored_insights_loads_no_data_frame_library(insights_wh, fmt, tmp_path):
    """Where ``iosight insights`` stored the job's insights, ``iosight job`` prints its
    summary and findings from plain rows: neither pandas nor numpy nor pyarrow, nor the
    rules (only a job without stored results is evaluated, by the rules over frames)."""
    args = ["job", "4478544", "-w", str(insights_wh), "-f", fmt]
    result, loaded = imported_modules(COMMAND, *args, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "vpicio_uni" in result.stdout and "P08" in result.stdout  # a stored finding
    rules = {"iosight.insights._evaluate", "iosight.insights._registered"}
    assert loaded.isdisjoint(HEAVY | rules), loaded & (HEAVY | rules)
    assert other_commands(loaded, "job") == set()


def test_schedule_start_from_a_pattern_loads_no_data_frame_library(tmp_path):
    """Algorithm 1 on a given burst pattern is numpy work; its table needs no pandas."""
    args = ["schedule", "start", "--min-time", "100", "--max-time", "200"]
    args += ["--pattern", "000110000", "--policy", "MDT"]
    result, loaded = imported_modules(COMMAND, *args, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "start options" in result.stdout
    assert loaded.isdisjoint(HEAVY - {"numpy"}), loaded & HEAVY
    assert other_commands(loaded, "schedule") == set()
