"""Machine-readable output parses; tables show human units."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.data import example_logs
from iosight.warehouse import Warehouse

runner = CliRunner()


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    path = tmp_path_factory.mktemp("out") / "wh"
    logs = [str(p) for p in example_logs()]
    result = runner.invoke(app, ["ingest", *logs, "--warehouse", str(path), "--workers", "1"])
    assert result.exit_code == 0, result.output
    return path


def test_json_is_one_array_and_jsonl_one_object_per_line(wh):
    as_json = runner.invoke(app, ["jobs", "-w", str(wh), "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    rows = json.loads(as_json.stdout)
    assert isinstance(rows, list) and len(rows) == Warehouse(wh).table("jobs").num_rows > 1
    as_jsonl = runner.invoke(app, ["jobs", "-w", str(wh), "--format", "jsonl"])
    lines = [json.loads(line) for line in as_jsonl.stdout.splitlines()]
    assert lines == rows
    for r in rows:  # integers stay integers
        assert type(r["jobid"]) is int and type(r["nprocs"]) is int
    assert "\\/" not in as_json.stdout  # paths are not escaped
    assert any(r["exe"].startswith("/global/") for r in rows)


def test_sql_json_keeps_big_integers_exact(wh):
    q = "select sum(POSIX_BYTES_WRITTEN)::bigint as b, 'a/b' as p from posix"
    rows = json.loads(runner.invoke(app, ["sql", q, "-w", str(wh), "-f", "json"]).stdout)
    csv = runner.invoke(app, ["sql", q, "-w", str(wh), "-f", "csv"]).stdout.splitlines()
    assert rows == [{"b": int(csv[1].split(",")[0]), "p": "a/b"}]


def test_tables_show_human_units(wh):
    q = "select sum(POSIX_BYTES_WRITTEN) as POSIX_BYTES_WRITTEN from posix"
    out = runner.invoke(app, ["sql", q, "-w", str(wh)]).stdout
    assert "e+" not in out and " TB" in out


def test_errors_name_each_path_once(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"\x00" * 100)
    runner.invoke(app, ["ingest", str(bad), "-w", str(tmp_path / "wh")])
    out = runner.invoke(app, ["errors", "-w", str(tmp_path / "wh"), "-f", "csv"]).stdout
    assert out.count("bad.darshan") == 1, out


def test_a_table_wider_than_the_console_keeps_every_value_whole(monkeypatch, capsys):
    """Nine columns on a 60-column console: no column is squeezed to nothing, no value cut."""
    import pandas as pd

    from iosight.cli import _common

    monkeypatch.setattr(_common.console, "width", 60)
    monkeypatch.setattr(_common, "on_terminal", lambda: True)  # Rich tables are a terminal's
    df = pd.DataFrame(
        {
            "system": ["edison/scratch2", "cscratch"],
            **{f"within_30pct_{m}": [88.01, 94.9] for m in ("paper", "median", "pred", "dep")},
            "chosen": ["predictor", "median"],
        }
    )
    _common.print_frame(df)
    out = capsys.readouterr().out
    cells = [c.strip() for line in out.splitlines() for c in line.split("│")[1:-1]]
    assert {"88.01", "94.9", "predictor", "median", "cscratch"} <= set(cells)
    assert "edison/scrat" in cells  # text folds over lines at a readable width, never to nothing
    rows = [line.split("│")[1:-1] for line in out.splitlines() if "│" in line]
    assert min(len(c) for r in rows for c in r) >= 7


def test_error_messages_are_printed_verbatim(capsys):
    """Brackets in a message are data (a list of values, a path), not Rich markup."""
    import typer

    from iosight._errors import IosightError
    from iosight.cli._common import cli_errors

    with pytest.raises(typer.Exit), cli_errors():
        raise IosightError("bandwidth must be finite. Got [nan, 3.0] in [bold]a.yaml[/bold]")
    err = capsys.readouterr().err
    assert "Got [nan, 3.0] in [bold]a.yaml[/bold]" in err and err.startswith("error:")


def test_every_format_option_is_checked_before_the_command_runs(tmp_path):
    """FORMAT_OPT itself refuses a bad --format: no warehouse is looked for or made."""
    for args in (["jobs"], ["errors"], ["timeline", "show"], ["bursts", "analyze"]):
        res = runner.invoke(app, [*args, "-w", str(tmp_path / "none"), "-f", "bogus"])
        assert res.exit_code == 1, args
        assert "the 'format' option must be table, csv, json or jsonl" in res.output, args
    assert not (tmp_path / "none").exists()


def _scores(n_cols: int, n_rows: int = 3):
    """SYNTHETIC scores shaped like `bursts train`'s table: long headers, short values."""
    import pandas as pd

    cols = {f"f1_weighted_validation_{i:02d}": [0.5 + i / 100 + r for r in range(n_rows)]
            for i in range(n_cols)}  # fmt: skip
    return pd.DataFrame({"direction": ["write"] * n_rows, **cols})


def test_a_table_off_a_terminal_is_plain_and_aligned(capsys):
    """Piped or redirected, a table fitting PLAIN_WIDTH is one line per row, no borders,
    headers whole, numbers right-aligned under their header."""
    from iosight.cli import _common

    df = _scores(4)
    _common.print_frame(df, title="scores")
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["", "scores"]
    header, rule, *rows = lines[2:]
    assert header.split() == list(df.columns) and set(rule.replace(" ", "")) == {"-"}
    assert len(rows) == 3 and "│" not in "".join(lines)
    last = df.columns[-1]
    assert [r[header.index(last) :].strip() for r in rows] == ["0.53", "1.53", "2.53"]
    assert all(len(r) == len(header) for r in rows)  # right-aligned to the header's end


def test_a_table_too_wide_off_a_terminal_prints_one_record_per_block(capsys):
    """`bursts train > out.txt` wrote 480-character lines with headers one letter per line:
    a table wider than PLAIN_WIDTH becomes blocks of ``column  value`` lines."""
    from iosight.cli import _common

    df = _scores(20, n_rows=2)
    _common.print_frame(df, title="test-part scores")
    out = capsys.readouterr().out
    blocks = out.split("\n\n")
    assert blocks[0] == "\ntest-part scores (one record per block)"
    for i, block in enumerate(blocks[1:]):
        head, *fields = block.strip("\n").splitlines()
        assert head == f"[{i + 1}]"
        assert [f.split()[0] for f in fields] == list(df.columns)  # every header whole
        assert fields[-1].split()[1] == f"{0.69 + i:.4g}"
    assert len(blocks) == 3 and max(map(len, out.splitlines())) < _common.PLAIN_WIDTH


def test_piped_command_output_is_plain(wh):
    """The command line itself, output captured (not a terminal): no box drawing, no
    wrapped header, every job one line in human units."""
    q = "select jobid, nprocs, run_time, nprocs * run_time as rank_seconds from jobs order by 1"
    out = runner.invoke(app, ["sql", q, "-w", str(wh)]).stdout
    header, rule, *rows = out.splitlines()
    assert header.split() == ["jobid", "nprocs", "run_time", "rank_seconds"]
    assert len(rows) == Warehouse(wh).table("jobs").num_rows
    assert not any(ch in out for ch in "│┃━─")
    # job 29959 of the MACSio example: 16 ranks for 4 s
    assert rows[0].split() == ["29959", "16", "4", "s", "64", "rank-s"]


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "jsonl"])
def test_rows_print_as_the_same_query_as_a_data_frame(wh, fmt, capsys):
    """Commands that print DuckDB's rows without pandas (jobs, sql, tables, errors,
    timeline show) print what the DataFrame of the same query printed, for every table
    of real logs: numbers, nulls, strings, timestamps and booleans alike (list columns
    apart: see the next test)."""
    from iosight.cli import _common

    warehouse = Warehouse(wh)
    queries = ["select 1.5 as decimal, null as nothing, 'a/b' as path"]
    for t in warehouse.tables():
        kept = [f'"{c}"' for c, kind in _column_types(warehouse, t) if not kind.endswith("[]")]
        queries.append(f'select {", ".join(kept)} from "{t}" order by all')
    for query in queries:
        _common.print_frame(warehouse.sql(query), fmt, max_rows=20)
        want = capsys.readouterr().out
        _common.print_frame(warehouse.rows(query), fmt, max_rows=20)
        assert capsys.readouterr().out == want, query


def _column_types(warehouse, table: str) -> list[tuple[str, str]]:
    rows = warehouse.rows(f'select * from "{table}" limit 0')
    return list(zip(rows.columns, rows.types, strict=True))


def test_rows_keep_big_integers_and_write_lists_as_lists(wh, capsys):
    """Where rows and a DataFrame differ, rows are exact: a HUGEINT stays an integer (a
    DataFrame makes it a float) and a list cell of a CSV reads as a list (a DataFrame
    writes numpy's '[ 7  9 23]', elided when long)."""
    from iosight.cli import _common

    warehouse = Warehouse(wh)
    _common.print_frame(warehouse.rows("select (2**70)::hugeint as huge"), "json")
    assert json.loads(capsys.readouterr().out) == [{"huge": 2**70}]
    _common.print_frame(warehouse.rows("select [7, 9, 23] as osts"), "csv")
    assert capsys.readouterr().out == 'osts\n"[7, 9, 23]"\n'


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "jsonl"])
def test_rows_of_arrays_print_as_their_data_frame(fmt, capsys):
    """``iosight schedule start`` prints Algorithm 1's options from numpy arrays without
    pandas: the same output as the DataFrame of those arrays."""
    import numpy as np
    import pandas as pd

    from iosight.cli import _common
    from iosight.schedule import choose_start
    from iosight.warehouse import Rows

    columns = choose_start("0001100001111000", 100, 1000, alpha=0.3).options_columns()
    columns["note"] = np.where(columns["chosen"], "chosen/start", "")
    _common.print_frame(pd.DataFrame(columns), fmt, title="options")
    want = capsys.readouterr().out
    _common.print_frame(Rows.from_columns(columns), fmt, title="options")
    assert capsys.readouterr().out == want
