"""``iosight serve``: the warehouse in a browser, read-only."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from iosight.cli._common import WAREHOUSE_OPT, cli_errors, console, err_console


def serve(
    warehouse: Path = WAREHOUSE_OPT,
    port: int = typer.Option(8050, min=1, max=65535, help="TCP port (1 to 65535)."),
    host: str = typer.Option(
        "127.0.0.1", help="Address to bind; another than localhost only when you mean it."
    ),
    allowed_host: list[str] = typer.Option(
        None,
        metavar="<name>",
        help="Another name browsers may reach the server by (repeatable); requests for any "
        "name but these and the bound address are refused (DNS rebinding).",
    ),
    memory_limit: str = typer.Option("1GB", help="DuckDB's memory limit, e.g. 1GB or 500MB."),
    query_timeout: float = typer.Option(
        10.0, help="Seconds the Jobs page's queries may run (a long 'where') before they stop."
    ),
) -> None:
    """Browse the warehouse: Jobs, Job, Facility and Errors pages (read-only)."""
    from iosight.serve import create_app, is_loopback, run, served_hosts

    with cli_errors():
        hosts = served_hosts(host, allowed_host or [])
        app = create_app(
            warehouse if warehouse is not None else _default(),
            hosts=hosts, memory_limit=memory_limit, query_timeout=query_timeout,
        )  # fmt: skip
    if not is_loopback(host):
        err_console.print(
            f"[bold yellow]warning:[/] binding {escape(host)}: anyone who can reach this "
            f"machine on port {port} can read the warehouse (no login); use 127.0.0.1 and an "
            "SSH tunnel to share it safely",
            markup=True,
            highlight=False,
        )
    console.print(
        f"serving {app.state.warehouse} at http://{_url_host(host)}:{port}/ (Ctrl-C stops)\n"
        f"host names accepted: {', '.join(hosts)} (more with --allowed-host)",
        highlight=False,
        soft_wrap=True,
    )
    run(app, host=host, port=port)


def _default() -> Path:
    from iosight.warehouse import default_path

    return default_path()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def register(app: typer.Typer) -> None:
    app.command()(serve)
