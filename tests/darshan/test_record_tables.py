"""Tables both 3.x readers build the same way (``iosight.darshan._record_tables``)."""

from __future__ import annotations

from iosight._errors import CorruptLogError
from iosight.darshan import _record_tables
from iosight.darshan._darshan3 import read_darshan3
from iosight.data import example_logs
from tests_support import SHARED


def test_names_table_python_and_arrow_prefix_match_agree(monkeypatch) -> None:
    """Few names use ``str.startswith``, many use Arrow's ``starts_with``: the same
    mount point for every name of every 3.x log at hand (longest prefix wins)."""
    logs = example_logs() + sorted((SHARED / "darshan-logs").glob("*.darshan"))
    checked = 0
    for path in logs:
        try:
            t = read_darshan3(path)
        except CorruptLogError:
            continue
        names = dict(
            zip(t["names"]["record_id"].to_pylist(), t["names"]["name"].to_pylist(), strict=True)
        )
        mounts = list(
            zip(
                t["mounts"]["mount_point"].to_pylist(),
                t["mounts"]["fs_type"].to_pylist(),
                strict=True,
            )
        )
        monkeypatch.setattr(_record_tables, "_PYTHON_PREFIX_PAIRS", 1 << 60)
        python = _record_tables.names_table(names, mounts)
        monkeypatch.setattr(_record_tables, "_PYTHON_PREFIX_PAIRS", -1)
        assert python.equals(_record_tables.names_table(names, mounts)), path.name
        checked += any(m != "UNKNOWN" for m in python["mount_point"].to_pylist())
    assert checked > 0
