"""Rule thresholds: Drishti's defaults, changed from a YAML file.

The names and default values are Drishti's (``drishti/includes/config.py``,
``thresholds``), so a Drishti user reads them the same way; iosight adds the few
its own rules need (``mpiio_min_nprocs``, ``redundant_bytes_ratio``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from iosight._errors import IosightError

# raised when what a rule decides changes, so that stored insights are evaluated again
# (2: a job whose source lacks a rule's counters is not evaluated, where 1 read them as 0)
RULES_VERSION = 2


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """Every threshold a rule compares with (Drishti's name and default where it has one)."""

    imbalance_operations: float = 0.1  # read/write share difference for P01-P04
    small_bytes: int = 1 << 20  # a request below this is small (Darshan's bins up to 1 MiB)
    small_requests: float = 0.1  # share of small requests that raises P05/P06/P15/P16
    small_requests_absolute: int = 1000  # ... and at least this many of them
    misaligned_requests: float = 0.1  # share of misaligned requests (P07/P08)
    metadata_time_rank: float = 30.0  # seconds of metadata time in one record (P17)
    random_operations: float = 0.2  # share of random requests (P11/P13)
    random_operations_absolute: int = 1000  # ... and at least this many
    imbalance_stragglers: float = 0.15  # slowest-fastest difference on shared files (P18/P19)
    imbalance_size: float = 0.3  # (max-min)/max bytes across ranks of one file (P21/P22)
    interface_stdio: float = 0.1  # share of bytes moved through STDIO (S01)
    collective_operations: float = 0.5  # share of independent MPI-IO calls in a file (M02/M03)
    collective_operations_absolute: int = 1000  # MPI-IO calls before M02/M03 apply
    # iosight's own
    mpiio_min_nprocs: int = 2  # M01 applies to jobs with at least this many processes
    redundant_bytes_ratio: float = 0.1  # share of bytes moved more than once that raises P09/P10

    def digest(self) -> str:
        """A short hash of the values and :data:`RULES_VERSION`: stored insights computed
        with other values, or by rules that have changed since, are stale."""
        text = json.dumps({**dataclasses.asdict(self), "rules": RULES_VERSION}, sort_keys=True)
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


_RATIOS = (
    "imbalance_operations",
    "small_requests",
    "misaligned_requests",
    "random_operations",
    "imbalance_stragglers",
    "imbalance_size",
    "interface_stdio",
    "collective_operations",
    "redundant_bytes_ratio",
)


def load_thresholds(path: str | Path | None = None, **overrides: float) -> Thresholds:
    """Defaults, then the values in a YAML mapping at ``path``, then ``overrides``.

    The YAML file is a flat mapping (``small_requests: 0.2``); Drishti's nested JSON
    form (``{"small": {"requests": 0.2}}``, names joined by ``_``) is accepted too.
    """
    values: dict[str, float] = {}
    if path is not None:
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as err:
            raise IosightError(f"cannot read thresholds from {path}: {err}") from None
        if not isinstance(data, dict):
            raise IosightError(f"{path}: thresholds must be a mapping of name: value")
        for key, value in data.items():
            if isinstance(value, dict):
                values.update({f"{key}_{k}": v for k, v in value.items()})
            else:
                values[key] = value
    values.update(overrides)
    fields = {f.name: f for f in dataclasses.fields(Thresholds)}
    for name, value in values.items():
        if name not in fields:
            raise IosightError(f"unknown threshold {name!r}; known: {', '.join(sorted(fields))}")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise IosightError(f"threshold {name!r} must be a number >= 0. Got {value!r} instead.")
        if name in _RATIOS and value > 1:
            raise IosightError(f"threshold {name!r} is a ratio in [0, 1]. Got {value!r} instead.")
    return Thresholds(**values)
