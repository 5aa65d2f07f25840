"""Every rule family imported, so that each has registered its rules in :data:`RULES`
(what evaluates or lists the rules imports them from here, never from ``_rules``)."""

from __future__ import annotations

from iosight.insights import (  # noqa: F401  (each module registers its rules)
    _access,
    _imbalance,
    _intensity,
    _interface,
    _metadata,
    _mpiio,
    _requests,
)
from iosight.insights._rules import RULES

__all__ = ["RULES"]
