"""Lazy re-exports for package ``__init__`` files (PEP 562 module ``__getattr__``).

A package such as :mod:`iosight.warehouse` re-exports names from submodules that
import pandas, pyarrow or scikit-learn at their top. Imported eagerly, every command
pays for all of them (pandas alone takes about 0.4 s to import) even when it only
lists jobs. Instead the package names where each export lives::

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {"_store": ("Warehouse",)})

and ``from iosight.warehouse import Warehouse`` imports ``_store`` alone, on first use.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of ``package``, whose
    ``exports`` map a submodule (relative to ``package``) to the names it provides."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__, sorted(where)
