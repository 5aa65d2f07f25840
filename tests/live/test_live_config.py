"""``iosight live``'s configuration: checked whole, one clear line per mistake."""

from __future__ import annotations

import subprocess
import sys

import pytest

from iosight._errors import IosightError
from iosight.live import LiveConfig
from tests_support import child_env


def _yaml(tmp_path, text: str):
    path = tmp_path / "live.yaml"
    path.write_text(text)
    return path


def test_a_full_configuration_reads_with_paths_from_its_folder(tmp_path):
    cfg = LiveConfig.from_yaml(
        _yaml(
            tmp_path,
            """
warehouse: wh
interval: 30s
logs: {directory: logs, settle: 1}
serve: {port: 0, allowed_hosts: [iosight.example.org]}
forecast: {models: bursts-write-logs, refit_every: 1d, workers: 1}
""",
        )
    )
    assert cfg.warehouse == tmp_path / "wh" and cfg.logs.directory == tmp_path / "logs"
    assert cfg.interval == 30.0 and cfg.logs.settle == 1
    assert cfg.serve.port == 0 and cfg.serve.allowed_hosts == ("iosight.example.org",)
    assert cfg.forecast.models == ("bursts-write-logs",) and cfg.forecast.refit_every == 86400.0
    assert cfg.forecast.workers == 1 and cfg.forecast.scheduler is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("warehouse: [unclosed", "is not valid YAML"),
        ("- a list", "must be a mapping"),
        ("logs: {directory: x}", "'warehouse' (the warehouse's folder) is missing"),
        ("warehouse: wh", "nothing to follow"),
        ("warehouse: wh\nlogs: {directory: x}\nbogus: 1", "unknown setting 'bogus'"),
        ("warehouse: wh\nlogs: {directory: x, settel: 1}", "unknown setting 'settel' in 'logs'"),
        ("warehouse: wh\nlogs: {settle: 1}", "'logs' needs 'directory'"),
        ("warehouse: wh\nlogs: {directory: x, settle: 0}", "'settle' parameter must be"),
        ("warehouse: wh\nlogs: {directory: x}\ninterval: soon", "cannot read duration 'soon'"),
        ("warehouse: wh\nlogs: {directory: x}\nserve: {port: 70000}", "'port' parameter"),
        (
            "warehouse: wh\nlogs: {directory: x}\nforecast: {refit_every: 1d}",
            "needs forecast.models",
        ),
        ("warehouse: wh\nfeeds: {ldms: 3}", "'feeds.ldms' must be a mapping"),
        (
            "warehouse: wh\nlogs: {directory: x}\nforecast: {models: m, workers: -1}",
            "'workers' parameter must be an integer >= 0",
        ),
    ],
)
def test_each_mistake_is_one_clear_error(tmp_path, text, says):
    with pytest.raises(IosightError, match=None) as err:
        LiveConfig.from_yaml(_yaml(tmp_path, text))
    assert says in str(err.value)


def test_an_unreadable_file_and_an_unknown_feed_are_one_line_each(tmp_path):
    """The command prints the error alone (no traceback), exit status 1."""
    env = child_env()
    for path, says in (
        (tmp_path / "absent.yaml", "cannot read the live configuration"),
        (_yaml(tmp_path, f"warehouse: {tmp_path / 'wh'}\nfeeds: {{gopher: {{}}}}"),
         "unknown feed 'gopher'"),
    ):  # fmt: skip
        out = subprocess.run([sys.executable, "-m", "iosight", "live", str(path)],
                             capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        assert out.returncode == 1, out.stderr
        assert says in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "wh").exists()  # nothing made before the configuration was whole


@pytest.mark.parametrize(
    ("kind", "settings", "says"),
    [
        ("prometheus", {}, "feeds.prometheus needs 'url'"),
        (
            "prometheus",
            {"url": "http://127.0.0.1:9090", "bogus": 1},
            "unknown setting 'bogus' in 'feeds.prometheus'",
        ),
        ("prometheus", {"url": "http://127.0.0.1:9090", "delay": "soon"}, "feeds.prometheus.delay"),
        ("slurm", {"timeout": "-3s"}, "feeds.slurm.timeout"),
        ("ldms", {"source": "x.jsonl", "bogus": 1}, "unknown setting 'bogus' in 'feeds.ldms'"),
        ("ldms", {"source": "x.jsonl", "max_age": "soon"}, "feeds.ldms.max_age"),
        ("ldms", {}, "feeds.ldms needs 'source'"),
        ("gopher", {}, "unknown feed 'gopher' (known: ldms, prometheus, slurm"),
    ],
)
def test_a_feed_section_is_checked_by_its_own_options(kind, settings, says):
    from iosight.live import make_feed

    with pytest.raises(IosightError) as err:
        make_feed(kind, settings)
    assert says in str(err.value)


def test_feed_sections_make_their_feeds():
    from iosight.live import PrometheusFeed, SlurmFeed, make_feed

    prom = make_feed("prometheus", {"url": "http://127.0.0.1:9090", "delay": "2min"})
    assert isinstance(prom, PrometheusFeed) and prom.options.delay == 120.0
    assert isinstance(make_feed("slurm", {"sacct": None}), SlurmFeed)


def test_feed_files_are_read_from_the_configuration_folder(tmp_path, monkeypatch):
    from iosight.live import make_feed

    cfg = LiveConfig.from_yaml(
        _yaml(
            tmp_path,
            """
warehouse: wh
feeds:
  ldms: {source: streams/darshan.jsonl}
  slurm: {recorded: slurm-replay}
""",
        )
    )
    monkeypatch.chdir("/")  # not where the configuration is
    ldms = make_feed("ldms", cfg.feeds["ldms"], cfg.base)
    slurm = make_feed("slurm", cfg.feeds["slurm"], cfg.base)
    assert ldms.options.source == str(tmp_path / "streams" / "darshan.jsonl")
    assert slurm.options.recorded == tmp_path / "slurm-replay"
    assert make_feed("ldms", {"source": "tcp:5140"}, cfg.base).options.source == "tcp:5140"


@pytest.mark.parametrize("delay", [0, "0", "0s", "0min"])
def test_a_feed_delay_of_zero_is_any_spelling_of_zero(delay):
    from iosight.live import make_feed

    feed = make_feed("prometheus", {"url": "http://127.0.0.1:9090", "delay": delay})
    assert feed.options.delay == 0.0
    with pytest.raises(IosightError, match="feeds.prometheus.delay"):
        make_feed("prometheus", {"url": "http://127.0.0.1:9090", "delay": "-1min"})
