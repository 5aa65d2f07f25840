"""``iosight live``'s configuration: one YAML file naming the warehouse, the sources, the
server and the refit schedule, checked whole before anything starts.

::

    warehouse: /var/lib/iosight/warehouse
    interval: 10s            # one round of polls (logs, then each feed)
    logs:                    # follow a Darshan log directory (iosight ingest --follow)
      directory: /lustre/darshan-logs
      settle: 2
    feeds:                   # live feeds, by kind: each section is the feed's settings
      prometheus: {url: "http://127.0.0.1:9090"}
    serve: {host: 127.0.0.1, port: 8050}
    forecast:
      models: [bursts-write-logs]   # saved forecasters to forecast with at each bin
      refit_every: 1d               # trained again on what has landed, while serving
      workers: 1                    # the refit's workers (default 0: one per core)

Relative paths are read from the configuration file's folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType

from iosight._errors import IosightError, check_param, is_integer

DEFAULT_INTERVAL_S = 10.0


def _duration(name: str, value: object, zero: bool = False) -> float:
    """Seconds in ``value`` (``30s``, ``5min``, ``1d`` or a number); ``zero``: 0 allowed
    (a feed's delay, say), else it must be positive."""
    from iosight.timeline import parse_duration

    try:
        return parse_duration(value, zero=zero)
    except IosightError as e:
        raise IosightError(f"live config: {name}: {e}") from None


def _section(name: str, value: object) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise IosightError(f"live config: {name!r} must be a mapping of settings, not {value!r}")
    return dict(value)


def _known_keys(name: str, section: Mapping, cls: type) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise IosightError(
            f"live config: unknown setting {unknown[0]!r} in {name!r} "
            f"(known: {', '.join(sorted(known))})"
        )


def feed_options(kind: str, settings: Mapping, cls: type, durations: tuple[str, ...] = ()) -> dict:
    """A feed's section ``feeds.<kind>`` as keyword arguments of its options class
    ``cls``: unknown keys refused, the ``durations`` read as seconds (``30s``, ``1d``, or
    ``0``; the options class checks each one's range)."""
    _known_keys(f"feeds.{kind}", settings, cls)
    opts = dict(settings)
    for name in durations:
        if name in opts:
            opts[name] = _duration(f"feeds.{kind}.{name}", opts[name], zero=True)
    return opts


@dataclass(frozen=True)
class LogsSettings:
    """The Darshan log directory to follow (:func:`iosight.warehouse.follow`)."""

    directory: Path  # the Darshan log directory followed
    settle: int = 2  # consecutive polls a file must look the same on before it is read
    workers: int = 0  # reader processes (0: one per core)
    reader: str = "native"  # Darshan 3.x reader: "native" or "libdarshan"
    compact: bool = True  # compact tables of many small files after each batch

    def __post_init__(self) -> None:
        ok = is_integer(self.settle) and self.settle >= 1
        check_param("settle", self.settle, ok, "an integer >= 1")
        check_param("workers", self.workers, is_integer(self.workers) and self.workers >= 0,
                    "an integer >= 0")  # fmt: skip


@dataclass(frozen=True)
class ServeSettings:
    """Where ``iosight serve``'s pages and decision APIs answer (read-only)."""

    host: str = "127.0.0.1"  # the address to bind
    port: int = 8050  # the TCP port (0: any free port)
    allowed_hosts: tuple[str, ...] = ()  # more Host names to answer to (served_hosts)
    memory_limit: str = "1GB"  # DuckDB's memory limit
    query_timeout: float = 10.0  # the deadline of user SQL, s

    def __post_init__(self) -> None:
        ok = is_integer(self.port) and 0 <= self.port <= 65535
        check_param("port", self.port, ok, "an integer from 0 (any free port) to 65535")
        object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))


@dataclass(frozen=True)
class ForecastSettings:
    """Saved forecasters to forecast with at each bin boundary, and how often to train
    them again on what has landed (None: never)."""

    models: tuple[str, ...] = ()  # names of saved forecasters (models/<name>/)
    refit_every: float | None = None  # seconds between trainings ("1d" in a file)
    workers: int = 0  # a refit's workers (0: one per core), as `bursts train --workers`
    scheduler: str | None = None  # a Dask scheduler's address for the refits (None: local)

    def __post_init__(self) -> None:
        from iosight.parallel import check_workers

        check_workers(self.workers)
        models = (self.models,) if isinstance(self.models, str) else tuple(self.models)
        object.__setattr__(self, "models", models)
        if self.refit_every is not None:
            object.__setattr__(self, "refit_every", _duration("refit_every", self.refit_every))
            if not self.models:
                raise IosightError("live config: forecast.refit_every needs forecast.models")


@dataclass(frozen=True)
class LiveConfig:
    """``iosight live``'s whole configuration (see the module's example)."""

    warehouse: Path  # the warehouse written
    interval: float = DEFAULT_INTERVAL_S  # seconds between rounds
    logs: LogsSettings | None = None  # the log directory followed (None: none)
    feeds: Mapping[str, Mapping] = field(default_factory=dict)  # feed kind -> its settings
    serve: ServeSettings | None = None  # the server run beside (None: none)
    forecast: ForecastSettings = field(default_factory=ForecastSettings)  # forecasts made
    #: the configuration file's folder: the feeds read relative paths from it
    base: Path = Path(".")

    def __post_init__(self) -> None:
        object.__setattr__(self, "interval", _duration("interval", self.interval))
        object.__setattr__(self, "feeds", MappingProxyType(dict(self.feeds)))
        if self.logs is None and not self.feeds:
            raise IosightError(
                "live config: nothing to follow: give 'logs' (a Darshan log directory) "
                "and/or 'feeds'"
            )

    @classmethod
    def from_mapping(cls, data: object, base: Path = Path(".")) -> LiveConfig:
        """The configuration in ``data`` (parsed YAML); relative paths from ``base``."""
        top = _section("the configuration", data)
        _known_keys("the configuration", top, cls)
        if "warehouse" not in top:
            raise IosightError("live config: 'warehouse' (the warehouse's folder) is missing")
        logs = _section("logs", top.get("logs")) if top.get("logs") is not None else None
        if logs is not None:
            _known_keys("logs", logs, LogsSettings)
            if "directory" not in logs:
                raise IosightError("live config: 'logs' needs 'directory' (the log folder)")
            logs = LogsSettings(**{**logs, "directory": base / str(logs["directory"])})
        feeds = _section("feeds", top.get("feeds"))
        for kind, section in feeds.items():
            feeds[kind] = _section(f"feeds.{kind}", section)
        serve = top.get("serve")
        if serve is not None:
            serve = _section("serve", serve)
            _known_keys("serve", serve, ServeSettings)
            serve = ServeSettings(**serve)
        forecast = _section("forecast", top.get("forecast"))
        _known_keys("forecast", forecast, ForecastSettings)
        return cls(
            warehouse=base / str(top["warehouse"]),
            interval=top.get("interval", DEFAULT_INTERVAL_S),
            logs=logs,
            feeds=feeds,
            serve=serve,
            forecast=ForecastSettings(**forecast),
            base=base,
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> LiveConfig:
        """The configuration in the YAML file ``path``."""
        import yaml

        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise IosightError(f"cannot read the live configuration {path}: {e.strerror}") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise IosightError(f"{path} is not valid YAML: {str(e).splitlines()[0]}") from None
        return cls.from_mapping(data, base=path.parent)
