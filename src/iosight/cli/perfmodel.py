"""``iosight perfmodel``: write-performance models for multistage write paths (Xie et al.)."""

from __future__ import annotations

import typer

from iosight.cli._common import cli_errors, console, print_frame

group = typer.Typer(
    help="Predict file-per-process write times from write-path features (Xie et al.).",
    no_args_is_help=True,
)
platform_group = typer.Typer(
    help="Platform descriptions (stages, counts, mappings).", no_args_is_help=True
)
group.add_typer(platform_group, name="platform")

FORMAT_OPT = typer.Option("table", "--format", help="table, csv or json.")


@platform_group.command("show")
def platform_show(
    platform: str = typer.Argument(..., help="Platform YAML, or a shipped name (titan, cetus)."),
    format: str = FORMAT_OPT,
) -> None:
    """Show the stages of a platform's write path, component counts and mappings."""
    with cli_errors():
        from iosight.perfmodel import load_platform

        plat = load_platform(platform)
        if format == "table":
            console.print(f"[bold]{plat.name}[/] ({plat.filesystem}): {plat.description}")
        print_frame(plat.summary(), format, title=f"write path of {plat.name}")


@group.command("features")
def features(
    platform: str = typer.Argument(..., help="Platform YAML, or a shipped name."),
    nodes: int = typer.Option(..., "--nodes", "-n", help="Compute nodes n."),
    cores: int = typer.Option(..., "--cores", "-m", help="Writing cores per node m."),
    size: str = typer.Option(..., "--size", "-K", help="Bytes per file K, e.g. 1GiB."),
    stripes: int | None = typer.Option(None, "--stripes", "-W", help="Lustre stripe count."),
    start_target: str | None = typer.Option(None, help="Lustre start OST: sequence|random."),
    placement: str = typer.Option("block", help="Node placement: block or random."),
    first_node: int = typer.Option(0, help="First node of a block placement."),
    seed: int = typer.Option(0, help="Seed for random placement / start OSTs."),
    format: str = FORMAT_OPT,
) -> None:
    """Print every feature of Tables I/II for one write pattern, and their count."""
    with cli_errors():
        from iosight.perfmodel import (
            WritePattern,
            describe_features,
            load_platform,
            parse_size,
            place_nodes,
        )

        plat = load_platform(platform)
        pat = WritePattern(nodes, cores, parse_size(size), stripes, start_target)
        pat.check(plat)
        where = place_nodes(plat, nodes, placement, first=first_node, seed=seed)
        table = describe_features(plat, pat, where, seed=seed)
        print_frame(table, format, title=f"{len(table)} features on {plat.name}", max_rows=100)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="perfmodel")
