"""Packages that re-export lazily (:mod:`iosight._lazy`) still export every name."""

from __future__ import annotations

import importlib

import pytest

LAZY = ["iosight", "iosight.darshan", "iosight.warehouse", "iosight.timeline"]


@pytest.mark.parametrize("package", LAZY)
def test_every_exported_name_resolves_and_is_listed(package):
    mod = importlib.import_module(package)
    for name in mod.__all__:
        value = getattr(mod, name)
        assert value is not None, name
        assert name in dir(mod)
        home = getattr(value, "__module__", None)
        if home is not None and home.startswith(package):  # the submodule's own object
            assert getattr(importlib.import_module(home), name) is value


@pytest.mark.parametrize("package", LAZY)
def test_an_unknown_name_is_an_attribute_error(package):
    mod = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        mod.no_such_name  # noqa: B018
    assert not hasattr(mod, "no_such_name")
