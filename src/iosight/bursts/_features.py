"""Feature sets 1-3 of Saeedizade et al. §V (NOTES §1).

Set 1: bytes of the current bin. Set 2: bytes, operations and I/O time. Set 3: set 2 plus
EMAs of bytes over 60, 130, 500 and 1000 minutes, ``MACD_short = EMA60 - EMA130`` and
``MACD_long = EMA500 - EMA1000`` (iosight's reading of the garbled Eq. 3: the standard
MACD the paper cites). ``E_t = a x_t + (1 - a) E_{t-1}`` with ``a = 2 / (n + 1)`` and n the
window in bins. Features at bin t use only bins up to and including t.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import check_param
from iosight.bursts._analysis import check_direction

if TYPE_CHECKING:
    import pandas as pd

FEATURE_SETS = (1, 2, 3)
EMA_MINUTES = (60, 130, 500, 1000)


def check_feature_set(feature_set: int) -> None:
    check_param("feature_set", feature_set, feature_set in FEATURE_SETS, "1, 2 or 3")


def ema_span_bins(minutes: float, bin_width: float) -> int:
    """The EMA window n in bins of ``bin_width`` seconds (at least 1)."""
    return max(1, int(round(minutes * 60.0 / bin_width)))


def ema(x: np.ndarray, n: int) -> np.ndarray:
    """``E_t = a x_t + (1 - a) E_{t-1}``, ``a = 2/(n+1)``, ``E_0 = x_0`` (Eq. 1-2); causal."""
    import pandas as pd

    return pd.Series(np.asarray(x, dtype=np.float64)).ewm(alpha=2.0 / (n + 1), adjust=False).mean()


def feature_names(direction: str, feature_set: int) -> list[str]:
    """Column names of a feature set, in the order models see them."""
    check_direction(direction)
    check_feature_set(feature_set)
    names = [f"{direction}_bytes"]
    if feature_set >= 2:
        names += [f"{direction}_ops", f"{direction}_time"]
    if feature_set == 3:
        names += [f"ema{m}" for m in EMA_MINUTES] + ["macd_short", "macd_long"]
    return names


def make_features(df: pd.DataFrame, direction: str, feature_set: int) -> pd.DataFrame:
    """The feature matrix of a timeline (one row per bin, same index as ``df``).

    Parameters
    ----------
    df : DataFrame
        A timeline with one bin width (:func:`iosight.timeline.load_timeline` or ``rebin``).
    direction : {"read", "write"}
        Read and write models are separate (§V).
    feature_set : {1, 2, 3}
    """
    import pandas as pd

    from iosight.timeline import bin_width_of

    names = feature_names(direction, feature_set)
    out = pd.DataFrame(index=df.index)
    for col in names[: 3 if feature_set >= 2 else 1]:
        out[col] = df[col].to_numpy(np.float64)
    if feature_set == 3:
        width = bin_width_of(df)
        x = df[f"{direction}_bytes"].to_numpy(np.float64)
        for m in EMA_MINUTES:
            out[f"ema{m}"] = ema(x, ema_span_bins(m, width)).to_numpy()
        out["macd_short"] = out["ema60"] - out["ema130"]
        out["macd_long"] = out["ema500"] - out["ema1000"]
    return out[names]
