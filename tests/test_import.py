"""Importing iosight, or one of its packages to read a warehouse, loads only what that
needs: every command and every worker process pays for what it imports."""

from __future__ import annotations

import pytest

from tests_support import imported_modules

# what a package that reads or lists must not load: the readers' and models' libraries
HEAVY = {"pandas", "numpy", "pyarrow", "scipy", "sklearn", "xgboost", "matplotlib", "dask"}


def test_import_iosight_loads_neither_pyarrow_nor_duckdb(tmp_path):
    """As iosight's ``__init__`` promises: ``iosight.Warehouse`` loads on first use."""
    result, loaded = imported_modules("import iosight", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "iosight" in loaded
    assert loaded.isdisjoint(HEAVY | {"duckdb"}), loaded & (HEAVY | {"duckdb"})


@pytest.mark.parametrize(
    "statement",
    [
        "from iosight.warehouse import Rows, Warehouse",
        "import iosight.warehouse, iosight.timeline",
    ],
)
def test_reading_packages_load_no_heavy_library(statement, tmp_path):
    """The warehouse and timeline packages re-export their ingest and build functions
    lazily, so opening a warehouse to read it loads neither pandas nor the readers."""
    result, loaded = imported_modules(statement, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert loaded.isdisjoint(HEAVY), loaded & HEAVY


def test_lazy_exports_resolve_on_use(tmp_path):
    """``iosight.Warehouse`` and a package's exports still work as attributes."""
    code = (
        "import iosight, iosight.warehouse as w\n"
        "assert iosight.Warehouse is w.Warehouse\n"
        "assert 'ingest' in dir(w) and callable(w.ingest)\n"
        "import sys; print('pandas' in sys.modules)\n"
    )
    result, loaded = imported_modules(code, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "True\n"  # ingest's module brings pandas when it is used
