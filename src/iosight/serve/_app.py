"""The web application: Starlette routes rendering Jinja2 pages over the served warehouse.

Pages are rendered on the server (Jinja2 with autoescaping: every value from a log
is escaped); the only scripts are plotly.js (its basic bundle, shipped in
``static/``) and ``static/app.js``, both served from this process, and a Content-Security-Policy
forbids any other script. Every response carries the security headers, errors too; a
request whose ``Host`` is not one the server answers to is refused (DNS rebinding).
Handlers are plain functions, which Starlette runs on its thread pool; each thread
queries through its own DuckDB cursor.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from iosight._errors import IosightError
from iosight._units import cell, human_bytes, human_duration, human_number, missing
from iosight.serve import _figures as figs
from iosight.serve import _pages as pages
from iosight.serve._decisions import Decisions, ForecastNotReady, StartAsk, served_start
from iosight.serve._metrics import WarehouseCollector, metrics_text
from iosight.serve._readonly import MEMORY_LIMIT, WHERE_TIMEOUT_S, ServedWarehouse
from iosight.warehouse import find_job

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

_HERE = Path(__file__).parent
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)  # plotly.js adds <style> elements at run time, hence 'unsafe-inline' for styles only
_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
_FILES_PAGE = 25
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")  # a DNS name, no wildcard


def plotly_js() -> Path:
    """The plotly.js bundle that iosight ships: the basic one (scatter, bar), all the pages use.

    The Python ``plotly`` wheel would bring the full bundle and 64 MB of figure API that
    nothing here calls (#20: a lean install), so the 1.2 MB basic bundle ships with iosight
    (``static/README.md``: its version, checksum and how to update it).
    """
    path = _HERE / "static" / "plotly-basic.min.js"
    if not path.is_file():
        raise IosightError(f"iosight's plotly.js bundle is missing: {path} (reinstall iosight)")
    return path


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def served_hosts(bind: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` names a server bound to ``bind`` answers to: ``bind`` itself, the
    loopback names when it is a loopback or wildcard address, and ``extra``.

    Anything else is refused, so a web page cannot point a name it controls at this
    server (DNS rebinding) and read the warehouse through a visitor's browser.
    """
    wildcard = bind in ("", "0.0.0.0", "::")
    names = [*(LOOPBACK_HOSTS if wildcard or is_loopback(bind) else ()),
             *([] if wildcard else [bind]), *extra]  # fmt: skip
    return list(dict.fromkeys(map(_host_name, names)))


def _host_name(text: str) -> str:
    """``text`` as a ``Host`` header holds it: lower case, IPv6 in brackets."""
    name = text.strip().lower()
    try:
        ip = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        if not _HOST_NAME.fullmatch(name):
            raise IosightError(f"not a host name or IP address: {text!r}") from None
        return name
    return f"[{ip}]" if ip.version == 6 else str(ip)


# ------------------------------------------------------------------------ formatting
def _utc(epoch) -> str:
    if epoch is None or (isinstance(epoch, float) and not math.isfinite(epoch)):
        return ""
    return dt.datetime.fromtimestamp(float(epoch), dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _shown(show):
    """A Jinja filter of ``show``: blank for a missing value (None, NaN)."""
    return lambda v: "" if missing(v) else show(float(v))


def _templates():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    # the units of the command line's tables (iosight._units): one convention everywhere
    env.filters.update(
        utc=_utc,
        human_bytes=_shown(human_bytes),
        duration=_shown(human_duration),
        num=human_number,
        cell=lambda v, column: cell(column, v),
    )
    return env


NOW_REFRESH_S = 10  # how often the Facility page asks for its "now" part again


def _now_summary(df) -> str:
    """One line on the Facility page's live part (:func:`pages.now_window`)."""
    logs_end = df.attrs.get("logs_end")
    after = f" after {_utc(logs_end)} UTC (the logs' last complete bin)" if logs_end else ""
    if df.empty:
        return (f"No live bins{after}: no live source (tables live_rates, live_io) holds "
                "later data.")  # fmt: skip
    last = df["bin_start"].max()
    partial = int((~df["complete"].astype(bool)).sum())
    sources = ", ".join(sorted(df["source"].unique()))
    return (
        f"{df['bin_start'].nunique()} live bins{after} from {sources}; newest bin "
        f"{_utc(last)} UTC; {partial} partial (not over yet)."
    )


# ------------------------------------------------------------------------ query params
MAX_PARAM_CHARS = 4096  # any query parameter (a 'where' has its own, lower bound)


def _opt(request: Request, name: str, cast=str):
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return None
    if len(raw) > MAX_PARAM_CHARS:
        raise IosightError(f"{name} has {len(raw):,} characters; at most {MAX_PARAM_CHARS:,}")
    try:
        return cast(raw)
    except (ValueError, IosightError):
        raise IosightError(f"cannot read {name} = {raw!r}") from None


def _time(text: str) -> float:
    from iosight.timeline import parse_time

    return parse_time(text)


def _job_filter(request: Request) -> pages.JobFilter:
    f = pages.JobFilter(
        start_from=_opt(request, "start_from", _time),
        start_to=_opt(request, "start_to", _time),
        exe=_opt(request, "exe"),
        user=_opt(request, "user"),
        nprocs_min=_opt(request, "nprocs_min", int),
        nprocs_max=_opt(request, "nprocs_max", int),
        bytes_min=_opt(request, "bytes_min", float),
        bytes_max=_opt(request, "bytes_max", float),
        where=_opt(request, "where"),
        sort=_opt(request, "sort") or "start_time",
        descending=(_opt(request, "dir") or "desc") != "asc",
        page=_opt(request, "page", int) or 1,
        page_size=_opt(request, "page_size", int) or 50,
    )
    return f


def _start_ask(request: Request) -> StartAsk:
    """``/api/start``'s parameters, named as ``iosight schedule start``'s options."""
    needed = {n: _opt(request, n, float) for n in ("min_time", "max_time")}
    for name, value in needed.items():
        if value is None:
            raise IosightError(f"{name} is required (seconds)")
    return StartAsk(
        **needed, policy=_opt(request, "policy"), alpha=_opt(request, "alpha", float),
        direction=_opt(request, "direction") or "write", model=_opt(request, "model"),
        pattern=_opt(request, "pattern"), bin_s=_opt(request, "bin", float) or 300.0,
        n_options=_opt(request, "options", int) or 24,
        estimator=_opt(request, "estimator") or "bins",
    )  # fmt: skip


def _link_params(request: Request, **changes) -> str:
    """This page's query string with some parameters changed (sort and page links)."""
    from urllib.parse import urlencode

    params = {k: v for k, v in request.query_params.items() if v != ""}
    for k, v in changes.items():
        if v is None:
            params.pop(k, None)
        else:
            params[k] = str(v)
    return "?" + urlencode(params)


# ------------------------------------------------------------------------ the app
class _Site:
    """The warehouse, the templates and small per-warehouse facts computed once, and the
    handlers of the pages and the APIs."""

    def __init__(self, wh: ServedWarehouse, now_refresh: float = NOW_REFRESH_S) -> None:
        self.wh, self.now_refresh = wh, now_refresh
        self.env = _templates()
        self._thresholds: pages.Thresholds | None = None
        self._synthetic: bool | None = None
        self.decisions = Decisions(wh)
        self.collector = WarehouseCollector(self.decisions)

    def thresholds(self) -> pages.Thresholds:
        if self._thresholds is None:
            self._thresholds = pages.burst_thresholds(self.wh)
        return self._thresholds

    def has_synthetic(self) -> bool:
        if self._synthetic is None:
            self._synthetic = self.wh.has_table("jobs") and bool(
                self.wh.sql("select coalesce(bool_or(synthetic), false) s from jobs")["s"].iloc[0]
            )
        return self._synthetic

    def render(self, name: str, request: Request, status: int = 200, **ctx) -> Response:
        from starlette.responses import HTMLResponse

        body = self.env.get_template(name).render(
            request=request,
            warehouse=str(self.wh.path),
            link=lambda **c: _link_params(request, **c),
            synthetic_warehouse=self.has_synthetic(),
            **ctx,
        )
        return HTMLResponse(body, status_code=status)

    def page(self, name: str, fn):
        """A page handler that shows user errors (bad filters, missing tables) on the page."""

        def handler(request: Request) -> Response:
            self.wh.refresh()
            try:
                return fn(request)
            except IosightError as err:
                return self.render(name, request, status=400, error=str(err), **_empty(name))

        return handler

    def jobs(self, request: Request) -> Response:
        f = _job_filter(request)
        result = pages.jobs_page(self.wh, f)
        return self.render("jobs.html", request, f=f, result=result, error=None)

    def job(self, request: Request) -> Response:
        from iosight.warehouse import job_summary

        key = find_job(self.wh, request.path_params["key"])
        s = job_summary(self.wh, key)
        files_page = _opt(request, "files_page", int) or 1
        kind, timeline = pages.job_timeline(self.wh, key)
        timeline_fig = (
            figs.dxt_figure(timeline) if kind == "dxt"
            else figs.heatmap_figure(timeline) if kind == "heatmap" else None
        )  # fmt: skip
        start = (files_page - 1) * _FILES_PAGE
        return self.render(
            "job.html", request, s=s, error=None,
            files=s.files.iloc[start : start + _FILES_PAGE], files_page=files_page,
            files_pages=max(1, math.ceil(len(s.files) / _FILES_PAGE)),
            figures={"access": figs.access_sizes_figure(s.access_sizes),
                     "files": figs.top_files_figure(s.files), "timeline": timeline_fig},
            key=key, timeline_kind=kind,
        )  # fmt: skip

    def job_part(self, request: Request) -> Response:
        """Insights or similar jobs of one job: an HTML fragment the job page fetches, so
        the page itself answers before these (possibly slow) analyses finish."""
        from starlette.responses import HTMLResponse

        self.wh.refresh()
        part = request.path_params["part"]
        try:
            key = find_job(self.wh, request.path_params["key"])
            if part == "insights":
                df, why = pages.job_insights_table(self.wh, key)
            elif part == "similar":
                df, why = pages.similar_jobs(self.wh, key)
            else:
                return HTMLResponse("no such part", status_code=404)
        except IosightError as err:
            df, why = None, str(err)
        body = self.env.get_template("_part.html").render(part=part, df=df, why=why)
        return HTMLResponse(body)

    def facility(self, request: Request) -> Response:
        thr = self.thresholds()
        df = pages.timeline_window(self.wh, thr)
        models = pages.list_models(self.wh)
        ask = {k: request.query_params.get(k, "") for k in ("model", "min_time", "max_time")}
        policy = request.query_params.get("policy", "W3")
        model = ask["model"] or (models[0] if models else "bursts-write")
        form = self.forecast_form(request, model, policy)
        title = "system I/O rate" + (" (SYNTHETIC jobs present)" if self.has_synthetic() else "")
        now = pages.now_window(self.wh)
        status = 503 if form["rec_wait"] else 400 if form["rec_error"] else 200
        response = self.render(
            "facility.html", request, status=status,
            error=None, thr=thr, models=models, ask=ask, policy=policy,
            fig_facility=figs.facility_figure(df, thr, title), bin_width=df.attrs["bin_width"],
            span=pages.timeline_span(self.wh), train=pages.cli_command(self.wh, "bursts train"),
            fig_now=figs.now_figure(now), now_summary=_now_summary(now), refresh_s=self.now_refresh,
            **form,
        )  # fmt: skip
        if form["rec_wait"]:
            response.headers["Retry-After"] = str(form["rec_wait"])
        return response

    def forecast_form(self, request: Request, model: str, policy: str) -> dict:
        """The Facility page's recommended start, on the served forecast of ``model`` (as
        ``/api/start``; none computed yet: ``rec_wait``, seconds to wait; a user error:
        ``rec_error``); nothing when the form was not sent."""
        form = {"rec": None, "served": None, "rec_error": None, "rec_wait": None, "fig_rec": None}
        if not (request.query_params.get("min_time") and request.query_params.get("max_time")):
            return form
        try:
            served, rec = pages.forecast_start(
                self.decisions, model, _opt(request, "min_time", float),
                _opt(request, "max_time", float), policy,
            )  # fmt: skip
        except ForecastNotReady as err:
            return form | {"rec_error": str(err), "rec_wait": math.ceil(err.retry_after)}
        except IosightError as err:
            return form | {"rec_error": str(err)}
        fig = figs.forecast_figure(rec.forecast, rec.start_at)
        return form | {"rec": rec, "served": served, "fig_rec": fig}

    def timeline_api(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        self.wh.refresh()
        try:
            df = pages.timeline_window(
                self.wh, self.thresholds(), _opt(request, "start", float),
                _opt(request, "end", float),
            )  # fmt: skip
        except IosightError as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        return JSONResponse({"traces": figs.facility_traces(df),
                             "bin_width": df.attrs["bin_width"]})  # fmt: skip

    def dxt_api(self, request: Request) -> Response:
        """The Job page's DXT view of a window (its zoom): at most MAX_DXT_POINTS points."""
        from starlette.responses import JSONResponse

        from iosight.report.dxt import DxtWindow

        self.wh.refresh()
        try:
            key = find_job(self.wh, request.path_params["key"])
            window = DxtWindow(
                _opt(request, "start", float), _opt(request, "end", float),
                _opt(request, "rank_min", int), _opt(request, "rank_max", int),
            )  # fmt: skip
            fig = figs.dxt_figure(pages.job_dxt(self.wh, key, window))
        except IosightError as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        return JSONResponse(fig)

    def api(self, fn):
        """A JSON endpoint: a user error (a bad parameter, a missing table or model) is a
        400 with its one line, ``{"error": ...}``; a forecast not computed yet a 503 with
        ``Retry-After`` (s) and ``{"error": ..., "retry_after": s}``."""
        from starlette.responses import JSONResponse

        def handler(request: Request) -> Response:
            self.wh.refresh()
            try:
                return JSONResponse(fn(request))
            except ForecastNotReady as err:
                wait = math.ceil(err.retry_after)
                return JSONResponse({"error": str(err), "retry_after": wait}, status_code=503,
                                    headers={"Retry-After": str(wait)})  # fmt: skip
            except IosightError as err:
                return JSONResponse({"error": str(err)}, status_code=400)

        return handler

    def forecast_api(self, request: Request) -> dict:
        directions = self.decisions.forecasts(_opt(request, "model"))
        return {"directions": directions, "computed_at": self.decisions.computed_at}

    def start_api(self, request: Request) -> dict:
        return served_start(self.decisions, _start_ask(request))

    def now_api(self, request: Request) -> dict:
        df = pages.now_window(self.wh)
        return {"figure": figs.now_figure(df), "summary": _now_summary(df)}

    def metrics(self, request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST
        from starlette.responses import Response as Plain

        return Plain(metrics_text(self.collector), media_type=CONTENT_TYPE_LATEST)

    def errors(self, request: Request) -> Response:
        result = pages.errors_page(self.wh, _opt(request, "page", int) or 1)
        return self.render("errors.html", request, result=result, error=None)


def create_app(
    path: str | Path,
    *,
    hosts: Sequence[str] = LOOPBACK_HOSTS,
    memory_limit: str = MEMORY_LIMIT,
    query_timeout: float = WHERE_TIMEOUT_S,
    now_refresh: float = NOW_REFRESH_S,
) -> Starlette:
    """The Starlette application serving the warehouse at ``path`` (read-only).

    ``hosts`` are the ``Host`` names it answers to (:func:`served_hosts`);
    ``memory_limit`` and ``query_timeout`` bound DuckDB (:class:`ServedWarehouse`);
    ``now_refresh`` is how often (s) the Facility page asks for its live part again.
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import FileResponse, RedirectResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    wh = ServedWarehouse(path, memory_limit=memory_limit, query_timeout=query_timeout)
    wh.connect()  # a bad memory limit fails here, not on the first request
    site = _Site(wh, now_refresh)
    plotly_path = plotly_js()

    routes = [
        Route("/", lambda r: RedirectResponse("/jobs")),
        Route("/jobs", site.page("jobs.html", site.jobs)),
        Route("/job/{key}", site.page("job.html", site.job)),
        Route("/job/{key}/{part}", site.job_part),
        Route("/facility", site.page("facility.html", site.facility)),
        Route("/errors", site.page("errors.html", site.errors)),
        Route("/api/timeline", site.timeline_api),
        Route("/api/job/{key}/dxt", site.dxt_api),
        Route("/api/forecast", site.api(site.forecast_api)),
        Route("/api/start", site.api(site.start_api)),
        Route("/api/now", site.api(site.now_api)),
        Route("/metrics", site.metrics),
        Route("/static/plotly.min.js", lambda r: FileResponse(plotly_path, headers=_CACHE)),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    middleware = [  # the first wraps the others: its headers go on their refusals too
        Middleware(_SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts), www_redirect=False),
    ]
    app = Starlette(routes=routes, middleware=middleware)
    app.state.warehouse = site.wh.path
    app.state.decisions = site.decisions  # iosight live asks it to compute after each round
    return app


_CACHE = {"Cache-Control": "public, max-age=86400"}


def _empty(name: str) -> dict:
    """Template variables a page needs when its query failed (only the error is shown)."""
    return {
        "jobs.html": {"f": pages.JobFilter(), "result": None},
        "job.html": {"s": None},
        "facility.html": {"thr": None},
        "errors.html": {"result": None},
    }[name]


class _SecurityHeaders:
    """Pure ASGI middleware adding the CSP and no-sniff headers to every response.

    A handler's unexpected exception becomes a plain 500 that carries them too (then
    goes on to the server's log), where Starlette's own error page would not.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def add(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        try:
            await self.app(scope, receive, add)
        except Exception:
            if not started:
                from starlette.responses import PlainTextResponse

                await PlainTextResponse("Internal Server Error", status_code=500)(
                    scope, receive, add
                )
            raise


def run(app: Starlette, *, host: str = "127.0.0.1", port: int = 8050) -> None:
    """Serve ``app`` with uvicorn (one process) until interrupted.

    ``host``: the address it listens on; ``port``: its port.
    """
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning")


class BackgroundServer:
    """A server running on a thread of this process (notebooks, tests, benchmarks).

    ``url`` is its address; :meth:`stop` (or leaving the ``with`` block) shuts it down.

    ``app``: the application served; ``host``: the address it listens on; ``port``: its port (0:
    any free one).
    """

    def __init__(self, app: Starlette, *, host: str = "127.0.0.1", port: int = 0) -> None:
        import socket
        import threading
        import time

        import uvicorn

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        bound = self._sock.getsockname()[1]
        self.url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise IosightError(f"the server on {self.url} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        """Shut the server down and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
