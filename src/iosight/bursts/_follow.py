"""Forecasts made while follow mode ingests: one at every bin boundary, from what the
logs held by then (``iosight ingest --follow DIR --forecast NAME``, issue #27).

A Darshan log lands when its job ends, so the forecast as of a boundary T (the end of
bin t) may use only the jobs known before T (``jobs.known_at``, else the end time): the
regime ``logs`` of :mod:`iosight.bursts._known`, in which the series known at t grows
only by whole rows. Follow mode therefore keeps, per forecaster, the bin it forecast
last and the EMA sums there, and after each batch streams only the jobs known since
(:func:`iosight.timeline.known_sums` with ``known=(lo, hi)``): each boundary costs the
jobs that became known in its bin, not the year (a batch adds a few queries over the
jobs' times: the clock, the dense span's fences). The forecasts are those of the batch
evaluation, :meth:`Forecaster.predict` at each bin on the complete warehouse (tested).

The clock is the data's: a boundary T has passed once a job known at T or later is in
the warehouse (live, the poll that found its log; in a replay, its recorded time), so
every job known before T is in by then, as logs land in the order they became known.

Feature set 4 reads the jobs running at T, which no landed log shows: they come from
Slurm's snapshots where the warehouse has them (:func:`iosight.bursts.scheduler_jobs`,
the logs never standing in for the scheduler), and there are none otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight.bursts._features import (
    EMA_MINUTES,
    burst_runs,
    ema_span_bins,
    feature_names,
    first_known_bin,
    state_features,
)
from iosight.bursts._forecaster import load_forecaster
from iosight.bursts._jobstate import job_state
from iosight.bursts._known import known_ema_sums, known_now, known_rows
from iosight.bursts._nowcast import nowcast, unseen_bytes

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from iosight.bursts._forecaster import Forecaster
    from iosight.warehouse import Warehouse

FORECASTS_TABLE = "forecasts"
#: as_of: the boundary (epoch s) the forecast was made at, from the jobs known before it;
#: bin_start: the bin forecast (lead bins after the one that ends at as_of)
FORECAST_COLUMNS = ("as_of", "model", "direction", "lead", "bin_start", "probability",
                    "burst", "severity")  # fmt: skip


def check_follow_forecaster(forecaster: Forecaster) -> None:
    """Refuse a forecaster follow mode cannot feed: trained on what a server-side monitor
    would know (``live``), or in interval mode."""
    md, name = forecaster.metadata, forecaster.name
    if forecaster.information != "logs":
        raise IosightError(
            f"model {name!r} was trained with --information {forecaster.information}: "
            "follow mode knows only the logs that landed; train one with --information logs"
        )
    if md["mode"] != "lead":
        raise IosightError(f"model {name!r} is in interval mode: follow forecasts per lead")


@dataclass
class _Series:
    """One forecaster's place: the index of the last bin it forecast from (its end is the
    last ``as_of``), the EMA sums there, per window in bins, and (set 4) the signed
    length of the burst run it ends."""

    forecaster: Forecaster
    last: int | None = None
    sums: dict[int, float] = field(default_factory=dict)
    run: float = 0.0


class FollowForecasts:
    """The saved ``logs`` forecasters ``names`` of ``warehouse``, brought up to date with
    :meth:`update` after each follow batch."""

    def __init__(self, warehouse: Warehouse, names: list[str]) -> None:
        if not names:
            raise IosightError("--forecast needs the name of a saved forecaster")
        self.warehouse = warehouse
        self.series = [_Series(load_forecaster(warehouse, n)) for n in dict.fromkeys(names)]
        for s in self.series:
            check_follow_forecaster(s.forecaster)
        widths = {s.forecaster.metadata["bin_width"] for s in self.series}
        if len(widths) > 1:
            raise IosightError(f"the forecasters have bins of {sorted(widths)} s: pick one width")
        self.width = float(widths.pop())
        self.checked = False  # the timeline's bins, once

    @property
    def as_of(self) -> float | None:
        """The latest boundary forecast at (epoch s; None before the first)."""
        done = [s.last for s in self.series if s.last is not None]
        return (max(done) + 1) * self.width if done else None

    def update(self) -> int:
        """Forecast at every bin boundary passed since the last forecast (from the first
        job's on a first run), append them to the ``forecasts`` table in one commit and
        return how many boundaries were passed. Builds the timeline (the model's bins)
        when the warehouse has none: its build options say which jobs count."""
        wh = self.warehouse
        if not wh.has_table("jobs") or (clock := _clock(wh)) is None:
            return 0
        self._check_timeline()
        self._resume()
        newest = math.floor(clock / self.width) - 1  # the last bin whose end has passed
        todo = [s for s in self.series if s.last < newest]
        if not todo:
            return 0
        first = min(s.last for s in todo) + 1
        rows = _known_sums(wh, first * self.width, (newest + 1) * self.width)
        jobs = self._jobs(first * self.width)
        made = [self._advance(s, rows, newest, jobs) for s in todo]
        wh.write_table(FORECASTS_TABLE, _arrow(made), mode="append")
        return newest - first + 1

    def _check_timeline(self) -> None:
        """Once a follow: a timeline of the forecasters' bins (built when there is none)."""
        from iosight.timeline import bin_width_of, build_timeline, load_timeline

        if self.checked:
            return
        if not self.warehouse.has_table("timeline"):
            build_timeline(self.warehouse, bin_width=self.width)
        width = bin_width_of(load_timeline(self.warehouse))
        self.series[0].forecaster.check_compatible(bin_width=width)
        self.checked = True

    def _resume(self) -> None:
        """Where each forecaster not yet placed left off: its last stored forecast, else
        the bin before the first job became known; its EMA sums from the jobs known by
        then (one pass over them, once a follow)."""
        fresh = [s for s in self.series if s.last is None]
        if not fresh:
            return
        stored = _last_forecasts(self.warehouse)
        start = math.floor(_first_known(self.warehouse) / self.width) - 1
        jobs = self._jobs((start + 1) * self.width)
        for s in fresh:
            at = stored.get(s.forecaster.name)
            s.last = start if at is None else round(at / self.width) - 1
            before = _known_sums(self.warehouse, -math.inf, (s.last + 1) * self.width)
            s.sums = self._sums_at(s, before)
            if jobs is not None and s.last > start:
                s.run = self._run_at(s, before, jobs, start + 1)

    def _sums_at(self, s: _Series, known: pd.DataFrame) -> dict[int, float]:
        """The EMA sums at bin ``s.last`` of the rows ``known`` (all known by its end)."""
        if not len(known):
            return {n: 0.0 for n in self._windows()}
        lo = math.floor(float(known["known_start"].min()) / self.width)
        starts = np.arange(lo, s.last + 1) * self.width
        rows = known_rows(known, starts, self.width, earlier=True)
        col = f"{s.forecaster.metadata['direction']}_bytes"
        return {n: float(known_ema_sums(rows, col, n)[-1]) for n in self._windows()}

    def _run_at(self, s: _Series, known: pd.DataFrame, jobs: pd.DataFrame, first: int) -> float:
        """Set 4's burst run length at bin ``s.last``, counted from bin ``first`` (the
        one the first job became known in) on the nowcast of the rows ``known``."""
        starts = np.arange(first, s.last + 1) * self.width
        rows = known_rows(known, starts, self.width)
        col = f"{s.forecaster.metadata['direction']}_bytes"
        return float(self._state(s, known_now(rows, col), starts, jobs, 0.0)["run_length"][-1])

    def _state(
        self, s: _Series, known: np.ndarray, starts: np.ndarray, jobs: pd.DataFrame, run: float
    ) -> dict[str, np.ndarray]:
        """Set 4's state columns at bins ``starts`` (as :func:`make_features` computes
        them) from their known bytes ``known`` and the scheduler's view ``jobs``, the
        burst run continued from ``run``."""
        md = s.forecaster.metadata
        direction, threshold = md["direction"], md["thresholds"]["threshold"]
        level = nowcast(known, unseen_bytes(jobs, starts, self.width, direction))
        state = job_state(jobs, starts, self.width, direction)
        restart = first_known_bin(jobs, starts, self.width)
        cols = state_features(level, state, threshold, burst_runs(level, threshold, restart, run))
        cols["nowcast"] = level
        return cols

    def _jobs(self, since: float) -> pd.DataFrame | None:
        """The jobs set 4 reads at the bins ending after ``since`` (None: no forecaster of
        set 4): the logs' ended runs and, where Slurm's snapshots exist, the jobs Slurm
        showed running; as follow sees the logs, never a job of theirs running (it landed
        after its end)."""
        if all(s.forecaster.metadata["feature_set"] != 4 for s in self.series):
            return None
        from iosight.bursts._jobstate import load_jobs
        from iosight.bursts._scheduler import scheduler_jobs

        jobs = load_jobs(self.warehouse)
        return scheduler_jobs(self.warehouse, jobs, logs_until=-math.inf, since=since)

    def _windows(self) -> list[int]:
        return [ema_span_bins(m, self.width) for m in EMA_MINUTES]

    def _advance(
        self, s: _Series, known: pd.DataFrame, newest: int, jobs: pd.DataFrame | None
    ) -> pd.DataFrame:
        """``s``'s forecasts at the ends of bins ``s.last + 1 .. newest`` from the rows
        ``known`` (those known since ``s.last``, and maybe earlier ones: skipped) and, for
        set 4, the scheduler's view ``jobs``."""
        md = s.forecaster.metadata
        first = s.last + 1
        known = known[known["known_start"] >= first * self.width - self.width / 2]
        starts = np.arange(first, newest + 1) * self.width
        X = self._features(s, known_rows(known, starts, self.width, earlier=True), starts, jobs)
        out = s.forecaster.forecast(X, starts, self.width)
        s.last = newest
        out["as_of"] = out.pop("at") + self.width
        out["model"], out["direction"] = s.forecaster.name, md["direction"]
        return out

    def _features(self, s: _Series, rows, starts: np.ndarray, jobs) -> np.ndarray:
        """The feature rows of ``rows``' bins ``starts`` under ``logs`` (as
        :func:`iosight.bursts.make_features` computes them in one pass over all bins),
        the EMAs continued from ``s.sums`` and set 4's burst run from ``s.run``, which
        move to the last bin."""
        md = s.forecaster.metadata
        direction, feature_set = md["direction"], md["feature_set"]
        names = feature_names(direction, feature_set, "logs")
        cols = {c: known_now(rows, c) for c in names[: 3 if feature_set >= 2 else 1]}
        if feature_set >= 3:
            for m, n in zip(EMA_MINUTES, self._windows(), strict=True):
                sums = known_ema_sums(rows, f"{direction}_bytes", n, s.sums[n])
                s.sums[n] = float(sums[-1])
                cols[f"ema{m}"] = 2.0 / (n + 1) * sums
            cols["macd_short"] = cols["ema60"] - cols["ema130"]
            cols["macd_long"] = cols["ema500"] - cols["ema1000"]
        if feature_set == 4:
            cols.update(self._state(s, cols[f"{direction}_bytes"], starts, jobs, s.run))
            s.run = float(cols["run_length"][-1])
        return np.column_stack([cols[c] for c in names])


def _known_sums(wh: Warehouse, lo: float, hi: float) -> pd.DataFrame:
    from iosight.timeline import known_sums

    return known_sums(wh, known=(lo, hi))


def _clock(wh: Warehouse) -> float | None:
    """The latest time a job of the warehouse became known (None: no job yet)."""
    from iosight.warehouse import KNOWN_AT

    got = wh.connect().execute(f"select max({KNOWN_AT}) from jobs").fetchall()[0][0]
    return None if got is None else float(got)


def _first_known(wh: Warehouse) -> float:
    from iosight.warehouse import KNOWN_AT

    return float(wh.connect().execute(f"select min({KNOWN_AT}) from jobs").fetchall()[0][0])


def _last_forecasts(wh: Warehouse) -> dict[str, float]:
    """Per model, the last boundary it forecast at in the ``forecasts`` table."""
    if not wh.has_table(FORECASTS_TABLE):
        return {}
    q = f"select model, max(as_of) from {FORECASTS_TABLE} group by model"
    return {m: float(t) for m, t in wh.connect().execute(q).fetchall()}


def _arrow(parts: list[pd.DataFrame]) -> pa.Table:
    import pandas as pd
    import pyarrow as pa

    df = pd.concat(parts, ignore_index=True)[list(FORECAST_COLUMNS)]
    df = df.astype({"lead": "int32", "severity": "int8", "burst": bool})
    return pa.Table.from_pandas(df, preserve_index=False)
