"""``iosight trace``: run a Python program under Darshan-style tracing; merge; recover."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.core import TyperGroup

from iosight.cli._common import cli_errors


class _ProgramGroup(TyperGroup):
    """Everything after ``--`` is the program to run, never a subcommand name."""

    def parse_args(self, ctx, args):
        program: list[str] = []
        if "--" in args:
            cut = args.index("--")
            args, program = args[:cut], args[cut + 1 :]
        ctx.meta["iosight_program"] = program
        return super().parse_args(ctx, args)


group = typer.Typer(
    cls=_ProgramGroup,
    invoke_without_command=True,
    help="Trace a Python program's I/O into Darshan logs: iosight trace --log-dir logs -- "
    "python prog.py ARGS...",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)


@group.callback()
def _run(
    ctx: typer.Context,
    log_dir: Path = typer.Option(Path("."), "--log-dir", "-o", help="Where logs are written."),
    record_limit: int = typer.Option(1024, help="Most records (files) per module and process."),
    modules: str = typer.Option("posix,stdio,numpy,h5py", help="Comma-separated trace modules."),
    sync_interval: float = typer.Option(0.1, help="Seconds between state-file syncs."),
    dxt: bool = typer.Option(False, help="Also keep a DXT trace of every POSIX access."),
    heatmap: bool = typer.Option(True, help="Keep HEATMAP bins of bytes over time."),
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from iosight.trace import run_traced

    program = ctx.meta.get("iosight_program") or list(ctx.args)
    with cli_errors():
        code, result = run_traced(
            program,
            log_dir,
            modules=tuple(m.strip() for m in modules.split(",") if m.strip()),
            record_limit=record_limit,
            sync_interval=sync_interval,
            dxt=dxt,
            heatmap=heatmap,
        )
    if result is not None:
        where = result.get("log") or result.get("partial")
        typer.echo(f"iosight trace: {where} {result['records']}", err=True)
        for mod, n in result["dropped"].items():
            if n:
                typer.echo(f"iosight trace: {mod} dropped {n} files over --record-limit", err=True)
    elif code >= 128:
        typer.echo(
            f"iosight trace: the program was killed (signal {code - 128}); its state is in "
            f"{log_dir / 'partial'}: run 'iosight trace recover {log_dir / 'partial'} "
            f"--out {log_dir}'",
            err=True,
        )
    raise typer.Exit(code)


@group.command("merge")
def _merge(
    paths: list[Path] = typer.Argument(..., help="Per-process logs, or directories of them."),
    out: Path = typer.Option(
        None,
        "--out",
        help="Existing directory (default: the first input's) or .darshan file for the job log.",
    ),
) -> None:
    """Merge per-process logs into one job log, reducing shared-file records to rank -1."""
    from iosight.trace import merge

    with cli_errors():
        path = merge(paths, out)
    typer.echo(str(path))


@group.command("recover")
def _recover(
    partial_dir: Path = typer.Argument(..., help="The log directory's partial/ folder."),
    out: Path = typer.Option(Path("."), "--out", help="Where recovered logs are written."),
) -> None:
    """Turn the state files of killed processes into Darshan logs."""
    from iosight.trace import recover

    with cli_errors():
        paths = recover(partial_dir, out)
    for p in paths:
        typer.echo(str(p))


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="trace")
