"""The decisions ``iosight serve`` answers with: the burst forecast of each direction, as
of the last complete bin, and Algorithm 1's start on it (no web code here).

The forecast comes, per direction, from a saved lead-mode forecaster
(:mod:`iosight.bursts`): the latest one follow mode stored at a bin boundary (table
``forecasts``, regime ``logs``: what the landed logs held) when there is one, else
computed on a thread of its own (:class:`Decisions`: a request never computes one) again
only when the files of the tables it reads (:func:`reads`) or its saved model changed.
A ``logs`` forecaster is computed as of the boundary the data's clock passed last (the
newest job's known-at time), as follow mode does; a
``live`` one from the system's rate up to the last complete bin: the server-side rates of
table ``live_rates`` (the Prometheus feed) where they are, else the live timeline of the
LDMS stream (table ``live_io``: the jobs' own I/O until their logs land), else the
stored timeline. Saeedizade et al. (2023), §V: forecasts per lead; §V-B, Algorithm 1.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from iosight._errors import IosightError, check_param
from iosight.serve._readonly import ServedWarehouse, deadline

if TYPE_CHECKING:
    import pandas as pd

    from iosight.bursts import Forecaster

log = logging.getLogger("iosight.serve")
T = TypeVar("T")

DIRECTIONS = ("read", "write")
RETRY_AFTER_S = 2.0  # what a request that finds no forecast yet is told to wait
#: the deadline of a forecast's queries (s; the server's query deadline when longer): off
#: any request, it only stops a runaway query from holding the one computation forever
FORECAST_TIMEOUT_S = 300.0
LIVE_RATES = "live_rates"  # the Prometheus feed's table (bin_start, read/write bytes, known_at)
LIVE_IO = "live_io"  # the LDMS feed's table (per job, module and bin; known_at)
_BIN_COLUMNS = ("lead", "bin_start", "probability", "burst", "severity")


@dataclass(frozen=True)
class ServedForecast:
    """One direction's next bins (``bins``: ``_BIN_COLUMNS``, by lead), made at ``as_of``
    (epoch s, the end of the last bin it used) by ``model``; ``information`` is what it
    knew (``logs`` or ``live``), ``rates`` where the system's rate came from (``logs``:
    the stored timeline; ``live_rates``: a server-side rate; ``live_io``: the live
    timeline of the LDMS stream), ``source`` whether follow mode stored it (``follow``)
    or the server computed it (``computed``)."""

    direction: str
    model: str
    feature_set: int
    information: str
    rates: str
    source: str
    as_of: float
    bin_width: float
    bins: pd.DataFrame

    def document(self) -> dict:
        """The forecast as JSON-ready data (what ``/api/forecast`` answers per direction)."""
        rows = [
            {"lead": int(r.lead), "bin_start": float(r.bin_start),
             "probability": float(r.probability), "burst": bool(r.burst),
             "severity": int(r.severity)}
            for r in self.bins.itertuples(index=False)
        ]  # fmt: skip
        return {
            "model": {"name": self.model, "feature_set": self.feature_set,
                      "information": self.information},
            "information": self.information, "rates": self.rates, "source": self.source,
            "as_of": self.as_of, "bin_width": self.bin_width, "bins": rows,
        }  # fmt: skip


class ForecastNotReady(IosightError):
    """No forecast has been computed yet for what was asked (the server computes them in
    the background and answers ``503`` with ``Retry-After`` meanwhile): ``message`` says
    so, ``retry_after`` how long to wait (s)."""

    def __init__(self, message: str, retry_after: float = RETRY_AFTER_S) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class _Computed:
    """The forecasts computed for one state of the warehouse (``key``, :func:`_state_key`):
    per direction the serving model's name (or why none), per model its forecast (or why
    none), and when the computation ended (``made_at``, epoch s)."""

    key: tuple
    picked: dict[str, str | IosightError]
    forecasts: dict[str, ServedForecast | IosightError]
    made_at: float

    def reusable(self, name: str, key: tuple) -> ServedForecast | IosightError | None:
        """``name``'s forecast when it was made from what ``key`` (a state key) says the
        model reads now, else None."""
        made = self.forecasts.get(name)
        before = dict(self.key[1]) if self.key else {}
        return made if made is not None and before.get(name) == dict(key[1]).get(name) else None


class _Kept:
    """The frames the forecasts read (the stored timeline, its known-at sums, feature set
    4's jobs), kept from one computation to the next while the files of the tables they
    are read from stay the same: a stream row or a rate re-reads none of them, a Slurm
    snapshot only Slurm's rows (a year of Summit's jobs: a second for the known-at sums,
    most of a second for the jobs).
    ``files``: per table, its files when the computation in hand began (taken before its
    views were made, so a frame is never older than the files it is kept under)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple] = {}
        self._frames: dict[str, tuple[tuple, object]] = {}

    def get(self, name: str, tables: Iterable[str], compute: Callable[[], T]) -> T:
        """Frame ``name``, read from ``tables`` by ``compute()`` unless kept for their files."""
        key = tuple(self.files[t] for t in tables)  # a table not taken: a KeyError, a bug
        got = self._frames.get(name)
        if got is None or got[0] != key:
            got = self._frames[name] = (key, compute())
        return got[1]  # type: ignore[return-value]


class Decisions:
    """The forecasts of a served warehouse, computed on a thread of their own each time
    the warehouse (its tables or saved models) changed, never by a request: a request
    serves the latest computed forecasts (their ``as_of`` says how recent) and starts the
    computation when they are out of date; before the first one exists it gets
    :class:`ForecastNotReady`. So a request costs a few reads however large the
    warehouse (the first forecast of a year of jobs is tens of seconds of Python).
    ``wh``: the served warehouse (the worker reads through one of its own on the same
    folder)."""

    def __init__(self, wh: ServedWarehouse) -> None:
        self.wh = wh
        self._own: ServedWarehouse | None = None  # the worker's: no request shares its views
        self._kept = _Kept()  # the worker's frames, kept between computations
        self._lock = threading.Lock()
        self._latest: _Computed | None = None
        self._worker: threading.Thread | None = None
        self._again = False  # the warehouse changed while the worker computed
        self._asked: set[str] = set()  # models asked by name, computed beside the serving ones
        self._seen: tuple | None = None  # the folders' and models' times, the key read then

    @property
    def computed_at(self) -> float | None:
        """When the latest forecasts were computed (epoch s; None before the first)."""
        latest = self._latest
        return None if latest is None else latest.made_at

    def refresh(self) -> bool:
        """Start computing in the background if what the forecasts read (:func:`reads`) or
        their models changed since the latest forecasts (``iosight live`` calls it after
        each round); never waits. True when the latest forecasts are those of the
        warehouse as it is."""
        key = self._current_key()
        with self._lock:
            if self._latest is not None and self._latest.key == key and not self._missing():
                return True
            if self._worker is not None:
                self._again = True
                return False
            self._worker = threading.Thread(target=self._work, name="iosight-forecast",
                                            daemon=True)  # fmt: skip
            self._worker.start()
            return False

    def _current_key(self) -> tuple:
        """:func:`_state_key` of the served warehouse, read again only when a table's
        folder or a saved model changed (their modification times: what the views'
        refresh compares), so a request costs a few ``stat`` calls."""
        from iosight.bursts import list_forecasters

        wh = self.wh
        models = tuple((n, _model_stamp(wh, n)) for n in list_forecasters(wh))
        times = (wh.tables_signature(), models)
        seen = self._seen  # one read: another thread may replace it
        if seen is None or seen[0] != times:
            seen = self._seen = (times, _state_key(wh))
        return seen[1]

    def wait(self, timeout: float = 60.0) -> bool:
        """Wait until the latest forecasts are those of the warehouse as it is (True), at
        most ``timeout`` s (False): for a script that writes, then asks."""
        until = time.monotonic() + timeout
        while not self.refresh():
            if time.monotonic() > until:
                return False
            time.sleep(0.02)
        return True

    def _missing(self) -> bool:
        return bool(self._asked - set(self._latest.forecasts)) if self._latest else True

    def _work(self) -> None:
        """Compute until the forecasts are those of the warehouse's current state, on a
        read-only warehouse of the worker's own (another thread's refresh would close
        the views under a computation)."""
        while True:
            try:
                if self._own is None:
                    wh = self.wh
                    self._own = ServedWarehouse(wh.path, memory_limit=wh.memory_limit,
                                                query_timeout=wh.query_timeout)  # fmt: skip
                key = _state_key(self._own)  # before the views: they are at least as new
                self._own.refresh()
                if self._latest is None or self._latest.key != key or self._missing():
                    made = _compute(self._own, key, set(self._asked), self._latest, self._kept)
                    with self._lock:
                        self._latest = made
            except Exception as err:  # a bug: logged with its traceback, answered in one line
                log.exception("computing the forecasts failed")
                why = IosightError(f"computing the forecast failed ({type(err).__name__}); "
                                   "the server's log has the details")  # fmt: skip
                with self._lock:  # no key: the next refresh tries again
                    self._latest = _Computed((), dict.fromkeys(DIRECTIONS, why), {}, time.time())
            with self._lock:
                if not self._again:
                    self._worker = None
                    return
                self._again = False

    def forecast(self, direction: str | None, model: str | None = None) -> ServedForecast:
        """The latest computed forecast of ``direction`` (by ``model`` when named, else
        the forecaster :func:`pick_model` picks; None: the direction ``model`` forecasts);
        :class:`ForecastNotReady` before it exists."""
        if direction is None:
            check_param("model", model, model is not None, "named when no direction is")
        else:
            check_param("direction", direction, direction in DIRECTIONS, "read or write")
        if model is not None:
            _require_model(self.wh, model)
            with self._lock:
                self._asked.add(model)
        self.refresh()
        latest = self._latest
        if latest is None:
            raise ForecastNotReady("the first forecast is being computed; ask again shortly")
        name = model or latest.picked[direction]
        if isinstance(name, IosightError):  # a new one: the stored one is shared by threads
            raise IosightError(str(name))
        made = latest.forecasts.get(name)
        if made is None:
            raise ForecastNotReady(f"the forecast of {name!r} is being computed; ask again shortly")
        if isinstance(made, IosightError):
            raise IosightError(str(made))
        if direction is not None and made.direction != direction:
            raise IosightError(f"model {name!r} forecasts {made.direction} bursts, not {direction}")
        return made

    def forecasts(self, model: str | None = None) -> dict[str, dict]:
        """Per direction, the served forecast's document (of ``model`` when named), or
        ``{"error": why}``; :class:`ForecastNotReady` when neither direction's is computed
        yet."""
        out, waiting = {}, None
        for d in DIRECTIONS:
            try:
                out[d] = self.forecast(d, model).document()
            except ForecastNotReady as err:
                waiting, out[d] = err, {"error": str(err)}
            except IosightError as err:
                if model is not None and "no model" in str(err):
                    raise
                out[d] = {"error": str(err)}
        if waiting is not None and all("error" in v for v in out.values()):
            raise waiting
        return out


def reads(metadata: dict | None) -> tuple[str, ...]:
    """The tables the served forecast of a saved forecaster (``metadata``: its
    ``metadata.json``; None: unreadable) reads: follow mode's stored forecasts
    (``forecasts``), the stored timeline and the tables of the jobs it counts (a ``logs``
    forecast's clock and known-at sums, :func:`iosight.timeline.known_sums`, and feature
    set 4's jobs, :func:`iosight.bursts.load_jobs`, read them), Slurm's snapshots for
    feature set 4 (the jobs it saw running), and for a ``live`` forecaster the live
    feeds' rates and stream. A ``logs`` forecaster reads no live feed: a stream row or a
    rate leaves its forecast as it is."""
    from iosight.bursts import FORECASTS_TABLE

    md = metadata or {}
    jobs = _set4_tables() if md.get("feature_set", 4) == 4 else _job_tables()
    tables = [FORECASTS_TABLE, *jobs]
    if md.get("information", "live") != "logs":
        tables += [LIVE_RATES, LIVE_IO]
    return tuple(tables)


def _job_tables() -> tuple[str, ...]:
    """The stored timeline and the tables of the jobs it counts (what a timeline build
    reads: ``jobs``, the layers' records, ``heatmap``, ``dxt_posix``, ``job_totals``)."""
    from iosight.timeline import LAYERS

    layers = (layer.lower() for layer in LAYERS)
    return ("timeline", "jobs", *layers, "heatmap", "dxt_posix", "job_totals")


def _set4_tables() -> tuple[str, ...]:
    """What feature set 4's jobs are read from: the jobs' tables and Slurm's snapshots."""
    from iosight.bursts import SCHED_JOBS, SCHED_SNAPSHOTS

    return (*_job_tables(), SCHED_JOBS, SCHED_SNAPSHOTS)


def _files(wh: ServedWarehouse, table: str) -> tuple:
    """The files that hold ``table`` now (name, size, modification time): a commit, a
    compaction or a purge changes them."""
    entries = wh.table_entries(table)
    return tuple((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in entries)


def _state_key(wh: ServedWarehouse) -> tuple:
    """What the forecasts depend on: whether a live feed has rows (the serving model's
    pick) and, per saved model, its stamp and the files of the tables it reads
    (:func:`reads`), so a forecast is computed again only when one of those changed."""
    from iosight.bursts import list_forecasters

    files: dict[str, tuple] = {}
    models = []
    for name in list_forecasters(wh):
        tables = reads(_metadata(wh, name))
        for t in tables:
            if t not in files:
                files[t] = _files(wh, t)
        models.append((name, (_model_stamp(wh, name), tuple((t, files[t]) for t in tables))))
    live = tuple(bool(files.get(t) or _files(wh, t)) for t in (LIVE_RATES, LIVE_IO))
    return (live, tuple(models))


def _compute(
    wh: ServedWarehouse, key: tuple, asked: set[str], before: _Computed | None, kept: _Kept
) -> _Computed:
    """Every direction's serving forecast and those of the ``asked`` models, each one's
    queries under :data:`FORECAST_TIMEOUT_S`; a forecast of ``before`` (the latest
    computed) is kept where its model and the files it reads are unchanged, and frames
    read before are kept in ``kept`` where their tables' files are."""
    kept.files = {t: f for _, (_, files) in key[1] for t, f in files}
    picked: dict[str, str | IosightError] = {}
    for d in DIRECTIONS:
        try:
            picked[d] = pick_model(wh, d)
        except IosightError as err:
            picked[d] = err
    names = [n for n in picked.values() if isinstance(n, str)]
    forecasts: dict[str, ServedForecast | IosightError] = {}
    for name in dict.fromkeys([*names, *sorted(asked)]):
        made = before.reusable(name, key) if before is not None else None
        if made is not None:
            forecasts[name] = made
            continue
        try:
            with deadline(wh.connect(), max(wh.query_timeout, FORECAST_TIMEOUT_S)):
                forecasts[name] = _make_forecast(wh, name, kept)
        except IosightError as err:
            forecasts[name] = err
    return _Computed(key, picked, forecasts, time.time())


def _require_model(wh: ServedWarehouse, name: str) -> None:
    """Refuse a name that is no saved forecaster (as loading it would, without loading)."""
    from iosight.bursts import list_forecasters, model_dir

    if not (model_dir(wh, name) / "metadata.json").is_file():
        known = ", ".join(list_forecasters(wh)) or "none"
        raise IosightError(f"no model {name!r} in {wh.path / 'models'} (models: {known}); "
                           "train one with 'iosight bursts train'")  # fmt: skip


def _model_stamp(wh: ServedWarehouse, name: str) -> int:
    """When the model's files last changed (a refit replaces them): part of the cache key."""
    from iosight.bursts import model_dir

    try:
        return (model_dir(wh, name) / "metadata.json").stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def _metadata(wh: ServedWarehouse, name: str) -> dict | None:
    """A saved forecaster's ``metadata.json`` (None if unreadable), without its models."""
    import json

    from iosight.bursts import model_dir

    try:
        return json.loads((model_dir(wh, name) / "metadata.json").read_text())
    except (OSError, ValueError):
        return None


def pick_model(wh: ServedWarehouse, direction: str) -> str:
    """The forecaster serving ``direction``: of the saved lead-mode ones, one follow mode
    keeps forecasting (the latest stored), else a ``live`` one where live rates exist, else
    a ``logs`` one, else any; ties by name."""
    from iosight.bursts import list_forecasters

    found = {}
    for name in list_forecasters(wh):
        md = _metadata(wh, name)
        if md and md.get("direction") == direction and md.get("mode") == "lead":
            found[name] = md.get("information", "live")
    if not found:
        train = f"iosight bursts train --direction {direction} --information logs"
        raise IosightError(f"no saved lead-mode forecaster of {direction} bursts: {train}")
    stored = _stored_models(wh)
    live = wh.has_table(LIVE_RATES) or wh.has_table(LIVE_IO)

    def rank(name: str) -> tuple:
        regime = found[name]
        return (-stored.get(name, -math.inf), regime != ("live" if live else "logs"), name)

    return min(found, key=rank)


def _stored_models(wh: ServedWarehouse) -> dict[str, float]:
    """Per model, the last boundary follow mode forecast at (table ``forecasts``)."""
    from iosight.bursts import FORECASTS_TABLE as FORECASTS

    if not wh.has_table(FORECASTS):
        return {}
    df = wh.sql(f"select model, max(as_of) t from {FORECASTS} group by model")
    return dict(zip(df["model"], df["t"].astype(float), strict=True))


def _make_forecast(wh: ServedWarehouse, name: str, kept: _Kept) -> ServedForecast:
    from iosight.bursts import load_forecaster

    fc = load_forecaster(wh, name)
    md = fc.metadata
    if md["mode"] != "lead":
        raise IosightError(f"model {name!r} is in interval mode: the next bins need lead mode")
    stored = _stored_forecast(wh, name)
    if stored is not None:
        as_of, bins = stored
        return _served(fc, "logs", "follow", as_of, bins)
    if fc.information == "logs":
        return _computed_logs(wh, fc, kept)
    return _computed_live(wh, fc, kept)


def _served(fc: Forecaster, rates: str, source: str, as_of: float, bins) -> ServedForecast:
    md = fc.metadata
    table = bins[list(_BIN_COLUMNS)].sort_values("lead", kind="mergesort").reset_index(drop=True)
    return ServedForecast(md["direction"], fc.name, int(md["feature_set"]), fc.information,
                          rates, source, float(as_of), float(md["bin_width"]), table)  # fmt: skip


def _stored_forecast(wh: ServedWarehouse, name: str) -> tuple[float, pd.DataFrame] | None:
    """The latest forecast follow mode stored for ``name``: its boundary and its bins."""
    from iosight.bursts import FORECASTS_TABLE as FORECASTS

    if not wh.has_table(FORECASTS):
        return None
    df = wh.sql(
        f"select * from {FORECASTS} where model = ? and as_of = "
        f"(select max(as_of) from {FORECASTS} where model = ?)",
        [name, name],
    )
    return (float(df["as_of"].iloc[0]), df) if len(df) else None


def _computed_logs(wh: ServedWarehouse, fc: Forecaster, kept: _Kept) -> ServedForecast:
    """A ``logs`` forecaster's forecast at the last boundary the data's clock passed (the
    newest job's known-at time), from the jobs known before it, as follow mode makes it."""
    from iosight.bursts import load_known
    from iosight.warehouse import KNOWN_AT

    timeline = _timeline(wh, fc, kept)
    width = float(fc.metadata["bin_width"])
    wh.require("jobs")
    clock = wh.connect().execute(f"select max({KNOWN_AT}) from jobs").fetchall()[0][0]
    if clock is None:
        raise IosightError("no job is known yet: nothing to forecast from")
    last = float(timeline["bin_start"].iloc[-1])
    at = min(math.floor(float(clock) / width) * width - width, last)
    known = kept.get("known_sums", _job_tables(), lambda: load_known(wh))
    pred = fc.predict(timeline, at, jobs=_jobs(wh, fc, kept), known=known)
    return _served(fc, "logs", "computed", pred.last_bin + width, pred.table)


def _computed_live(wh: ServedWarehouse, fc: Forecaster, kept: _Kept) -> ServedForecast:
    """A ``live`` forecaster's forecast after the last complete bin of the system's rate:
    the stored timeline with ``live_rates``' bins over it (their latest value per source,
    summed over sources), up to the last bin that ended before the newest rate arrived;
    without rates, the live timeline of the LDMS stream (:func:`_computed_stream`); with
    neither, the stored timeline's last bin."""
    timeline = _timeline(wh, fc, kept)
    width = float(fc.metadata["bin_width"])
    rates, complete = live_rates(wh, width)
    jobs = _jobs(wh, fc, kept)
    if rates is None:
        streamed = _computed_stream(wh, fc, timeline, jobs)
        if streamed is not None:
            return streamed
        pred = fc.predict(timeline, jobs=jobs)
        return _served(fc, "logs", "computed", pred.last_bin + width, pred.table)
    pred = fc.predict(_with_rates(timeline, rates, width), complete, jobs=jobs)
    return _served(fc, LIVE_RATES, "computed", pred.last_bin + width, pred.table)


def _computed_stream(
    wh: ServedWarehouse, fc: Forecaster, timeline: pd.DataFrame, jobs: pd.DataFrame | None
) -> ServedForecast | None:
    """A ``live`` forecaster's forecast after the last complete bin of the live timeline
    (:func:`iosight.live.stream_timeline`: the logs, and the LDMS stream of the jobs
    whose log has not landed), or None without a stream (``jobs``: feature set 4's)."""
    from iosight.live import stream_timeline

    width = float(fc.metadata["bin_width"])
    frame, complete = stream_timeline(wh, width, logs=timeline)
    if frame is None:
        return None
    pred = fc.predict(frame, complete, jobs=jobs)
    return _served(fc, LIVE_IO, "computed", pred.last_bin + width, pred.table)


def _jobs(wh: ServedWarehouse, fc: Forecaster, kept: _Kept) -> pd.DataFrame | None:
    """The jobs feature set 4 reads: the ended runs of the logs and, where Slurm's
    snapshots exist, the jobs Slurm saw running (the logs never hold a running job)."""
    from iosight.bursts import load_jobs, scheduler_jobs

    if fc.metadata["feature_set"] != 4:
        return None
    logs = kept.get("logs_jobs", _job_tables(), lambda: load_jobs(wh))  # kept past a snapshot
    return kept.get("jobs", _set4_tables(), lambda: scheduler_jobs(wh, logs))


def _timeline(wh: ServedWarehouse, fc: Forecaster, kept: _Kept) -> pd.DataFrame:
    from iosight.timeline import bin_width_of, load_timeline

    wh.require("timeline", "build it with 'iosight timeline build'")
    df = kept.get("timeline", ("timeline",), lambda: load_timeline(wh))
    if df.empty:
        raise IosightError("the timeline is empty: nothing to forecast from")
    fc.check_compatible(bin_width=bin_width_of(df))
    return df


def live_rates(wh: ServedWarehouse, width: float) -> tuple[pd.DataFrame | None, float]:
    """The live rates per bin of ``width`` seconds (bytes in the bin: ``bin_start``,
    ``read_bytes``, ``write_bytes``; each source's latest value, summed over sources) and
    the start of the last complete bin (the last that ended by the newest ``known_at``);
    ``(None, nan)`` when there are none."""
    if not wh.has_table(LIVE_RATES):
        return None, math.nan
    df = wh.sql(
        "with latest as (select source, bin_start, arg_max(read_bytes, known_at) r, "
        f"arg_max(write_bytes, known_at) w from {LIVE_RATES} group by source, bin_start) "
        "select floor(bin_start / ?) * ? bin_start, sum(r) read_bytes, sum(w) write_bytes "
        "from latest group by 1 order by 1",
        [width, width],
    )
    newest = wh.connect().execute(f"select max(known_at) from {LIVE_RATES}").fetchall()[0][0]
    if not len(df) or newest is None:
        return None, math.nan
    complete = df["bin_start"][df["bin_start"] + width <= float(newest)]
    if complete.empty:
        return None, math.nan
    return df, float(complete.iloc[-1])


def last_logs_bin(wh: ServedWarehouse) -> tuple[float, float, float, float] | None:
    """The stored timeline's last bin that ended by the newest job's known-at time (start,
    width, read and write bytes): the logs' latest complete bin."""
    from iosight.warehouse import KNOWN_AT

    if not wh.has_table("timeline") or not wh.has_table("jobs"):
        return None
    got = (
        wh.connect()
        .execute(
            "select bin_start, bin_width, read_bytes, write_bytes from timeline "
            f"where bin_start + bin_width <= (select max({KNOWN_AT}) from jobs) "
            "order by bin_start desc limit 1"
        )
        .fetchall()
    )
    return tuple(map(float, got[0])) if got else None


def _with_rates(timeline: pd.DataFrame, rates: pd.DataFrame, width: float) -> pd.DataFrame:
    """The timeline on every bin up to the last rate, its read/write bytes replaced by the
    live rates where they have a bin (a server-side rate counts every job; the logs'
    timeline only the logs that landed; an unknown rate, NaN, keeps the timeline's). Bins
    only the rates have count no operations."""
    import pandas as pd

    from iosight.timeline import TIMELINE_COLUMNS

    first = min(timeline["bin_start"].iloc[0], rates["bin_start"].iloc[0])
    last = max(timeline["bin_start"].iloc[-1], rates["bin_start"].iloc[-1])
    grid = pd.DataFrame({"bin_start": np.arange(round(first / width), round(last / width) + 1)
                         * width})  # fmt: skip
    df = grid.merge(timeline, on="bin_start", how="left").fillna(0)
    df["bin_width"] = width
    over = df["bin_start"].map(dict(zip(rates["bin_start"], rates.index, strict=True)))
    has = over.notna().to_numpy()
    rows = over[has].astype(int).to_numpy()
    for col in ("read_bytes", "write_bytes"):
        values = rates[col].to_numpy(float)[rows]
        known = np.isfinite(values)  # a bin Prometheus had no sample for is unknown (NaN)
        df.loc[np.flatnonzero(has)[known], col] = values[known]
    return df[list(TIMELINE_COLUMNS)]


MAX_JOB_S = 7 * 86400.0  # longest run time a start is asked for (bounds Algorithm 1's walk)
MAX_OPTIONS = 288  # start options: a day of 5-minute bins


@dataclass(frozen=True)
class StartAsk:
    """A job's question to ``/api/start``, as ``iosight schedule start`` takes it: run
    times alone and in bursts (s), the weight of the delay (``alpha`` or ``policy``), the
    start options, the estimator, and the bursts: a served forecast (``direction``, or
    ``model``) or a ``pattern`` of 0/1 per bin of ``bin_s`` seconds. Bounded, so one
    request costs little."""

    min_time: float
    max_time: float
    policy: str | None = None
    alpha: float | None = None
    direction: str = "write"
    model: str | None = None
    pattern: str | None = None
    bin_s: float = 300.0
    n_options: int = 24
    estimator: str = "bins"

    def __post_init__(self) -> None:
        for name in ("min_time", "max_time"):
            value = getattr(self, name)
            check_param(name, value, 0 < value <= MAX_JOB_S, f"seconds in (0, {MAX_JOB_S:g}]")
        check_param("options", self.n_options, 1 <= self.n_options <= MAX_OPTIONS,
                    f"between 1 and {MAX_OPTIONS}")  # fmt: skip
        check_param("bin", self.bin_s, 60 <= self.bin_s <= 86400, "seconds in [60, 86400]")
        if self.pattern is not None and self.model is not None:
            raise IosightError("give at most one of pattern and model")


def served_start(decisions: Decisions, ask: StartAsk) -> dict:
    """Algorithm 1's start (§V-B) for ``ask``: the choice, and the forecast it used (the
    served one, :meth:`Decisions.forecast`) or the pattern given."""
    from iosight.schedule import choose_start, start_on_forecast

    how = {"alpha": ask.alpha, "policy": ask.policy, "n_options": ask.n_options,
           "estimator": ask.estimator}  # fmt: skip
    if ask.pattern is not None:
        choice = choose_start(ask.pattern, ask.min_time, ask.max_time, bin_s=ask.bin_s, **how)
        used, start_at = {"pattern": ask.pattern, "bin_s": ask.bin_s}, None
    else:
        served = decisions.forecast(ask.direction, ask.model)
        rec = start_on_forecast(served.bins, ask.min_time, ask.max_time, **how)
        choice, start_at = rec.choice, rec.start_at
        used = {"direction": served.direction, **served.document()}
    return {
        "start_at": start_at, "delay_s": choice.delay, "option": choice.index,
        "run_time_s": choice.run_time, "total_time_s": choice.total_time,
        "score": choice.score, "alpha": choice.alpha, "estimator": choice.estimator,
        "forecast": used,
    }  # fmt: skip
