"""``iosight schedule``: burst-aware start times (Algorithm 1, §V-B), simulation, emulation."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import typer

from iosight.cli._common import (
    FORMAT_OPT,
    FORMATS,
    WAREHOUSE_OPT,
    RichProgress,
    cli_errors,
    console,
    open_warehouse,
    print_frame,
)

group = typer.Typer(
    help="Burst-aware start times: Algorithm 1 of Saeedizade et al. (2023), §V-B.",
    no_args_is_help=True,
)

_POLICY_HELP = "Named policy: MDT (alpha 1), W1..W4 (0.7, 0.6, 0.5, 0.4), MRT (alpha 0)."


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _parse_at(text: str) -> float | None:
    from iosight._errors import IosightError

    if text == "now":
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise IosightError(
            f"--at must be 'now' or an ISO time such as 2024-03-01T12:00. Got {text!r}."
        ) from None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def _start_format(value: str) -> str:
    """``schedule start``'s ``--format``: the frame formats, or ``sbatch``."""
    from iosight._errors import IosightError

    with cli_errors():
        if value != "sbatch" and value not in FORMATS:
            raise IosightError(
                f"the 'format' option must be table, csv, json, jsonl or sbatch. Got {value!r}."
            )
        return value


_START_FORMAT_OPT = typer.Option(
    "table",
    "--format",
    "-f",
    help="table, csv, json, jsonl, or sbatch: only sbatch's --begin= option for the chosen"
    " start, in local time (sbatch $(iosight schedule start ... -f sbatch) job.sh).",
    callback=_start_format,
)


@group.command("start")
def start(
    min_time: float = typer.Option(..., "--min-time", help="Run time alone (s)."),
    max_time: float = typer.Option(..., "--max-time", help="Run time in bursts all along (s)."),
    pattern: str = typer.Option(None, "--pattern", help="Predicted bursts, e.g. 000110000..."),
    alpha: float = typer.Option(None, "--alpha", help="Weight of the delay in the score."),
    policy: str = typer.Option(None, "--policy", help=_POLICY_HELP),
    warehouse: Path = WAREHOUSE_OPT,
    model: str = typer.Option(None, "--model", help="Trained burst model (instead of a pattern)."),
    at: str = typer.Option(
        "now",
        "--at",
        help="Decision time: now or ISO time (UTC unless it says); with --pattern, when the"
        " pattern's first bin starts (used by --format sbatch).",
    ),
    bin_s: float = typer.Option(300.0, "--bin", help="Bin length L in seconds (with --pattern)."),
    options: int = typer.Option(
        24,
        "--options",
        help="Start options N; N x (ceil(max-time / bin) + 1) may not exceed 16,777,216"
        " (2^24, bounds memory).",
    ),
    estimator: str = typer.Option("bins", "--estimator", help="bins (paper) or fractional."),
    fmt: str = _START_FORMAT_OPT,
) -> None:
    """Recommend a start delay for a job from a burst pattern or a burst model's forecast."""
    from iosight import schedule as sched
    from iosight._errors import IosightError
    from iosight.warehouse import Rows

    with cli_errors():
        if (pattern is None) == (model is None):
            raise IosightError("give either --pattern or --model")
        if pattern is not None:
            choice = sched.choose_start(
                pattern,
                min_time,
                max_time,
                alpha=alpha,
                policy=policy,
                bin_s=bin_s,
                n_options=options,
                estimator=estimator,
            )
            when = ""
            first_bin = _parse_at(at)
            start_at = (time.time() if first_bin is None else first_bin) + choice.delay
        else:
            rec = sched.recommend_start(
                open_warehouse(warehouse),
                model,
                min_time,
                max_time,
                at=_parse_at(at),
                alpha=alpha,
                policy=policy,
                n_options=options,
                estimator=estimator,
            )
            choice, start_at = rec.choice, rec.start_at
            when = f" (at {_when(start_at)})"
            if fmt != "sbatch":
                pat = "".join("1" if b else "0" for b in rec.forecast["burst"].astype(bool))
                console.print(f"forecast from {_when(rec.decided_at)}: {pat}")
        if fmt == "sbatch":
            from iosight.live import begin_option

            typer.echo(begin_option(start_at))
            return
        if fmt == "table":
            console.print(
                f"start after {choice.delay:g} s{when}: option {choice.index}, estimated run time "
                f"{choice.run_time:g} s, total {choice.total_time:g} s, score {choice.score:g} "
                f"(alpha {choice.alpha:g})"
            )
        options_rows = Rows.from_columns(choice.options_columns())  # no pandas to import
        print_frame(options_rows, fmt, title="start options", max_rows=options)


@group.command("simulate")
def simulate(
    warehouse: Path = WAREHOUSE_OPT,
    series: Path = typer.Option(
        None, "--series", help="Burst series file (0/1 text, or CSV/Parquet 'is_burst')."
    ),
    app: list[str] = typer.Option(
        None, "--app", help="name:min_time:max_time (repeat); default the paper's three."
    ),
    policy: list[str] = typer.Option(None, "--policy", help="Policies (repeat); default all 6."),
    model: str = typer.Option(
        None, "--model", help="Choose on this lead-mode burst model's forecasts instead."
    ),
    direction: str = typer.Option("write", "--direction", help="read or write bursts."),
    k: float = typer.Option(None, "--k", help="Burst threshold in std (default: 1% of bins)."),
    bin_s: float = typer.Option(300.0, "--bin", help="Bin length L in seconds."),
    estimator: str = typer.Option("bins", "--estimator", help="bins (paper) or fractional."),
    out: Path = typer.Option(None, "--out", help="Write the report (HTML, PNG, CSV) here."),
    fmt: str = FORMAT_OPT,
) -> None:
    """Run Algorithm 1 over every 24-bin window with a burst (Fig. 10-11)."""
    from iosight import schedule as sched
    from iosight._errors import IosightError

    with cli_errors():
        apps = [sched.App.parse(a) for a in app] if app else list(sched.PAPER_APPS)
        policies = policy or tuple(sched.POLICIES)
        comparison = None
        if model is not None and series is not None:
            raise IosightError("give at most one of --series and --model")
        if model is not None:
            study = sched.forecast_study(
                open_warehouse(warehouse), model, apps, policies, estimator=estimator
            )
            sim, comparison = study.forecast, study.summary()
        else:
            if series is not None:
                source = sched.read_burst_series(series, bin_s=bin_s)
            else:
                source = sched.burst_series(
                    open_warehouse(warehouse), direction=direction, bin_s=bin_s, k=k
                )
            sim = sched.simulate_source(
                source, apps, policies, estimator=estimator, progress=RichProgress()
            )
        data = sim.settings.get("data")
        label = f" (data: {data})" if data else ""
        if fmt == "table":
            console.print(
                f"{sim.n_windows} windows with a burst, {sim.n_patterns} distinct patterns, "
                f"from {sim.settings['source']}{label}"
            )
        if comparison is None:
            print_frame(sim.summary(), fmt, title="mean per app and policy (Fig. 10)")
        else:
            print_frame(comparison, fmt, title="chosen on forecasts vs on actual bursts")
        if out is not None:
            from iosight.report.schedule import write_report

            index = write_report(sim, out, comparison=comparison)
            console.print(f"report: {index}")


@group.command("emulate")
def emulate(
    pattern: list[str] = typer.Option(None, "--pattern", help="Patterns (repeat); default 6."),
    bin_s: float = typer.Option(1.0, "--bin", help="Scaled bin length to size the job (s)."),
    job_bins: float = typer.Option(2.8, "--job-bins", help="Job run time alone, in bins."),
    writers: int = typer.Option(1, "--writers", help="Background writer processes (1-4)."),
    repeats: int = typer.Option(3, "--repeats", help="Runs to measure min and max time."),
    directory: Path = typer.Option(None, "--dir", help="Parent of the temporary directory."),
    fmt: str = FORMAT_OPT,
) -> None:
    """Run a real I/O-bound job under emulated bursts; compare with Algorithm 1 (Fig. 9).

    Writes bounded files (<= 256 MiB) in a temporary directory that is always removed.
    """
    from iosight import schedule as sched

    with cli_errors():
        cfg = sched.EmulatorConfig(
            bin_s=bin_s, job_bins=job_bins, writers=writers, repeats=repeats, directory=directory
        )
        result = sched.emulate(pattern or sched.DEFAULT_PATTERNS, cfg, progress=RichProgress())
        if fmt == "table":
            console.print(
                f"job writes {result.work_mb} MiB: min_time {result.min_time:.2f} s, "
                f"max_time {result.max_time:.2f} s, bin {result.bin_s:.3f} s; "
                f"load average {result.load_average}"
            )
            alone = ", ".join(f"{t:.2f}" for t in result.alone_runs)
            loaded = ", ".join(f"{t:.2f}" for t in result.loaded_runs)
            console.print(f"calibration runs: alone [{alone}] s, writers on [{loaded}] s")
        runs = result.runs
        if fmt == "table":  # narrower for a terminal; csv/json keep every column
            runs = runs.drop(columns=["delay_s"]).round(3)
        print_frame(runs, fmt, title="estimated vs measured run time (s)", max_rows=200)
        print_frame(result.within(), fmt, title="share of estimates within 10% / 20%")


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="schedule")
