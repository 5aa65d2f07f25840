"""Reading applications from YAML: every malformed file is one IosightError naming it."""

import pytest
from typer.testing import CliRunner

from iosight import IosightError
from iosight.cli import app
from iosight.iosched import allocate_apps, simulate_apps

GOOD = {"name": "climate", "q": 4, "phases": 3, "t_cpu": 100, "v_io": 2000, "bandwidth": "[10, 18]"}


def _apps_yaml(tmp_path, **change):
    fields = GOOD | change
    body = "\n".join(f"    {k}: {v}" for k, v in fields.items() if v is not None)
    path = tmp_path / "apps.yaml"
    path.write_text(f"apps:\n  - {body.strip()}\n")
    return path


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bandwidth": "100"}, "'bandwidth'"),
        ({"bandwidth": "[a, 2]"}, "'bw'"),
        ({"bandwidth": "[10, .inf]"}, "'bw'"),
        ({"bandwidth": "[{x: 1}]"}, "'bw'"),
        ({"q": "four"}, "'q'"),
        ({"q": "4.9"}, "'q'"),
        ({"q": "true"}, "'q'"),
        ({"q": "1.0e+30"}, "'q'"),
        ({"phases": "2.7"}, "'phases'"),
        ({"v_io": ".inf"}, "'v_io'"),
        ({"t_cpu": ".nan"}, "'t_cpu'"),
        ({"t_cpu": "[1]"}, "'t_cpu'"),
    ],
)
def test_a_bad_field_names_the_file_app_and_field(tmp_path, change, field):
    path = _apps_yaml(tmp_path, **change)
    for run in (allocate_apps, simulate_apps):
        with pytest.raises(IosightError) as err:
            run(path, 2, "TCPU", "greedy-nc")
        msg = str(err.value)
        assert msg.startswith(f"{path}: app 0 (climate): the {field} parameter"), msg
        assert "\n" not in msg


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apps: [{q: 1\n", "invalid YAML"),
        ("apps:\n  - 5\n", "app 0 must be a mapping"),
        ("apps: {q: 1}\n", "non-empty 'apps' list"),
        ("- 1\n", "non-empty 'apps' list"),
        ("q_cpu: lots\napps:\n  - {q: 1, phases: 2, t_cpu: 1, v_io: 1, bandwidth: [1]}\n", "q_cpu"),
    ],
)
def test_a_malformed_file_is_one_error(tmp_path, text, expected):
    path = tmp_path / "apps.yaml"
    path.write_text(text)
    with pytest.raises(IosightError, match=expected) as err:
        allocate_apps(path, 2, "TCPU", "greedy-nc")
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def test_numbers_yaml_spells_oddly_are_read_as_numbers(tmp_path):
    """PyYAML reads 2e5 (no dot) as a string and 4.0 as a float: both are the numbers."""
    path = _apps_yaml(tmp_path, q="4.0", v_io="2e5", bandwidth="[10, null, 30]")
    table, _ = allocate_apps(path, 3, "BestBdw", "greedy-nc")
    assert table["q"].tolist() == [4] and table["n"].tolist() == [3]


def test_cli_shows_a_bad_field_as_one_line(tmp_path):
    path = _apps_yaml(tmp_path, v_io=".inf")
    r = CliRunner().invoke(app, ["iosched", "simulate", str(path)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "'v_io' parameter must be a finite number > 0" in r.output
