"""Tables both 3.x readers build the same way (``iosight.darshan._record_tables``)."""

from __future__ import annotations

import pyarrow as pa

from iosight._errors import CorruptLogError
from iosight.darshan import RowBlock, _record_tables
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


def test_names_table_prefix_corner_cases_agree(monkeypatch) -> None:
    """The dict lookup by prefix length and Arrow's ``starts_with`` agree where they could
    part: a name equal to a mount point, a name shorter than longer mount points, a
    mount point listed twice (its first file-system type wins), a prefix that is no
    directory (``/gpfs`` of ``/gpfsx``), the root, an empty mount point and no match."""
    names = {1: "/gpfs", 2: "/g", 3: "/gpfsx/a", 4: "/gpfs/alpine/f", 5: "rel", 6: ""}
    mounts = [("/gpfs", "gpfs"), ("/gpfs/alpine", "gpfs2"), ("/gpfs", "nfs"), ("/", "rootfs")]
    tables = []
    for pairs in (1 << 60, -1):  # the Python path, then Arrow's
        monkeypatch.setattr(_record_tables, "_PYTHON_PREFIX_PAIRS", pairs)
        tables.append(_record_tables.names_table(names, mounts))
        tables.append(_record_tables.names_table(names, [*mounts, ("", "none")]))
    assert tables[0].equals(tables[2]) and tables[1].equals(tables[3])
    assert tables[0]["mount_point"].to_pylist() == [
        "/gpfs", "/", "/gpfs", "/gpfs/alpine", "UNKNOWN", "UNKNOWN"
    ]  # fmt: skip
    assert tables[0]["fs_type"].to_pylist()[0] == "gpfs"
    assert tables[1]["fs_type"].to_pylist()[4:] == ["none", "none"]


def test_row_blocks_joined_equal_the_tables_read_whole() -> None:
    """With ``chunked=True`` a module of fixed-size records comes as its records and
    ``jobs`` as its row; the blocks of one table from several logs, joined (what ingest
    does per batch), are those logs' tables read whole, end to end, and each block alone
    is its table."""
    whole: dict[str, list] = {}
    blocks: dict[str, list[RowBlock]] = {}
    for path in example_logs():
        tables, chunked = read_darshan3(path), read_darshan3(path, chunked=True)
        for name, t in chunked.tables.items():
            if isinstance(t, RowBlock):
                assert t.table().equals(tables[name]) and t.num_rows == tables[name].num_rows
                whole.setdefault(name, []).append(tables[name])
                blocks.setdefault(name, []).append(t)
    assert {"posix", "mpiio", "stdio", "h5f", "h5d", "jobs"} <= set(blocks)
    assert len(blocks["posix"]) > 5 and len(blocks["jobs"]) == len(example_logs())
    for name, found in blocks.items():
        assert RowBlock.join(found).equals(pa.concat_tables(whole[name])), name
