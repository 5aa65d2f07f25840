"""Bandwidth curves b(n): the FORGE I/O-node data, profile families, OST curves, CSV.

References
----------
.. [1] Bandet, Boito, Pallez (2024), §II (Fig. 1, 2), §V-A and §VI-B (Fig. 11).
.. [2] Bez et al., FORGE I/O-forwarding measurements on MareNostrum 4 (data set README).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iosight._errors import IosightError, check_param

PROFILES = ("Ascent", "Descent", "Peak", "Neutral")
FORGE_KEY = ["processes", "clients", "layout", "spatiality", "request", "odirect"]
GRIDS = ("interpolated", "measured")
#: How :func:`load_forge` reduces the repetitions of one measurement.
STATISTICS = ("mean", "best")
FORGE_FILES = ("marenostrum-4.results.csv", "marenostrum-4-gpfs.results.csv")


@dataclass(frozen=True)
class CurveSet:
    """Named bandwidth curves on the common grid n = 1..M (``bw[i, n - 1]``, MB/s);
    NaN where n was not measured on a measured-only grid. ``bw0`` (optional) is b(0) per
    curve: the bandwidth with no I/O resource (direct file-system access).

    ``names``: the curves' names; ``bw``: the curves, one row per curve; ``source``: where they
    came from (FORGE data, PARAMETRIC, a CSV).
    """

    names: tuple[str, ...]
    bw: np.ndarray
    source: str
    bw0: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.bw.ndim != 2 or self.bw.shape[0] != len(self.names) or self.bw.shape[0] == 0:
            raise IosightError(f"curve set {self.source!r} holds no curves")
        known = np.isfinite(self.bw)
        if not known[:, 0].all() or np.any(self.bw[known] <= 0):
            raise IosightError(f"curve set {self.source!r} lacks b(1) or has b <= 0")

    @property
    def profiles(self) -> np.ndarray:
        """Each curve's profile class (:func:`classify_profiles`)."""
        return classify_profiles(self.bw)


def interpolate_grid(n: np.ndarray, bw: np.ndarray, n_max: int | None = None) -> np.ndarray:
    """Curves measured at ``n`` (increasing) linearly interpolated on n = 1..n_max.

    iosight's reading: between measured points b(n) is linear in n; beyond the
    largest measured n it is not extrapolated (``n_max`` defaults to it), below the
    smallest one b is held at its first value.

    ``bw``: the curves at ``n``, one row per curve.
    """
    n = np.asarray(n, dtype=float)
    grid = np.arange(1, int(n_max or n.max()) + 1)
    return np.vstack([np.interp(grid, n, row) for row in np.atleast_2d(bw)])


def load_forge(directory: Path, *, statistic: str = "mean", grid: str = "interpolated") -> CurveSet:
    """The 189 MareNostrum 4 access patterns of Bez et al. as curves on n = 1..8.

    Parameters
    ----------
    directory : Path
        The ``bez_forge_io_forwarding_bandwidth`` folder.
    statistic : {"mean", "best"}
        Per scenario and number of I/O nodes, the mean bandwidth over repetitions
        (default, iosight's choice: robust to one lucky run) or the best repetition
        (the authors' ``figure-3-b`` choice).
    grid : {"interpolated", "measured"}
        n = 1..8 with n = 3, 5, 6, 7 interpolated (default), or only the measured
        n = 1, 2, 4, 8 (b is NaN elsewhere: those counts are never allocated).

    Notes
    -----
    iosight's reading: the rows with 0 forwarders (direct GPFS access) are not part of
    the curve, as using no I/O node is not an allocation of the model of §III; they are
    kept as ``bw0`` (same statistic) for MCKP's zero-forwarder option. n = 1, 2, 4, 8
    are measured and n = 3, 5, 6, 7 linearly interpolated; no curve goes past 8.
    """
    import pandas as pd

    check_param("statistic", statistic, statistic in STATISTICS, "'mean' or 'best'")
    check_param("grid", grid, grid in GRIDS, "'interpolated' or 'measured'")
    paths = [Path(directory) / f for f in FORGE_FILES]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        from iosight.data import fetch_hint

        raise IosightError(
            f"FORGE data not found: {', '.join(missing)}; {fetch_hint('forge-bandwidth')}"
        )
    df = pd.concat([pd.read_csv(p, sep=";") for p in paths], ignore_index=True)
    agg = "mean" if statistic == "mean" else "max"
    wide = df.groupby([*FORGE_KEY, "forwarders"])["bandwidth"].agg(agg).unstack("forwarders")
    wide = wide.dropna()
    names = tuple("-".join(str(v) for v in key) for key in wide.index)
    bw0 = wide.pop(0).to_numpy() if 0 in wide.columns else None
    n = wide.columns.to_numpy()
    bw = interpolate_grid(n, wide.to_numpy())
    if grid == "measured":
        bw[:, ~np.isin(np.arange(1, bw.shape[1] + 1), n)] = np.nan
    source = f"forge-mn4 ({statistic} of repetitions, {grid} n)"
    return CurveSet(names=names, bw=bw, source=source, bw0=bw0)


def classify_profiles(bw: np.ndarray, *, neutral_tol: float = 0.2) -> np.ndarray:
    """Profile family of each curve: Ascent, Descent, Peak or Neutral (Fig. 1).

    iosight's reading: Neutral when min b >= (1 - ``neutral_tol``) max b; otherwise
    by where the maximum lies: at the largest n (Ascent), at n = 1 (Descent), or
    in between (Peak).

    ``bw``: the curves, one row per curve.
    """
    bw = np.atleast_2d(bw)
    top = np.nanmax(bw, axis=1)
    arg = np.nanargmax(bw, axis=1)
    last = bw.shape[1] - 1 - np.argmax(np.isfinite(bw)[:, ::-1], axis=1)
    out = np.where(arg == last, "Ascent", np.where(arg == 0, "Descent", "Peak"))
    low = np.nanmin(bw, axis=1)
    return np.where(low >= (1 - neutral_tol) * top, "Neutral", out).astype(object)


def profile_fits(bw: np.ndarray, profiles: np.ndarray, *, degree: int = 3) -> dict[str, np.ndarray]:
    """One polynomial per profile family, fitted to the curves normalised by their b(1).

    Returns the fitted normalised curve on n = 1..M for each family (Fig. 11); it is
    floored at 1 % of its maximum so that no bandwidth is zero. Unmeasured (NaN)
    points are left out of the fit.

    ``bw``: the curves, one row per curve; ``profiles``: each curve's profile family;
    ``degree``: the polynomial's degree.
    """
    n = np.arange(1, bw.shape[1] + 1)
    fits = {}
    for prof in PROFILES:
        rows = bw[profiles == prof]
        if len(rows) == 0:
            continue
        norm = (rows / rows[:, :1]).ravel()
        x = np.tile(n, len(rows))
        ok = np.isfinite(norm)
        deg = min(degree, len(np.unique(x[ok])) - 1)
        coef = np.polyfit(x[ok], norm[ok], deg)
        fit = np.polyval(coef, n)
        fits[prof] = np.maximum(fit, 0.01 * fit.max())
    return fits


#: Family curves of the robustness study: ``median`` (per n, the median of the family's
#: normalised curves: no peak where the data has none) or ``cubic`` (Fig. 11's fit).
FAMILY_CURVES = ("median", "cubic")


def profile_medians(bw: np.ndarray, profiles: np.ndarray) -> dict[str, np.ndarray]:
    """Per profile family, the median over its curves of b(n) / b(1) at each n
    (unusable n, NaN in every curve, stay NaN).

    ``bw``: the curves, one row per curve; ``profiles``: each curve's profile family.
    """
    out = {}
    for prof in PROFILES:
        rows = bw[profiles == prof]
        if len(rows):
            norm = rows / rows[:, :1]
            ok = np.isfinite(norm).any(axis=0)
            med = np.full(bw.shape[1], np.nan)
            med[ok] = np.nanmedian(norm[:, ok], axis=0)
            out[prof] = med
    return out


def profile_estimates(
    bw: np.ndarray, profiles: np.ndarray, *, degree: int = 3, method: str = "median"
) -> np.ndarray:
    """Each curve replaced by its family's curve, scaled to the curve's own b(1).

    iosight's reading of §VI-B: the heuristics know T_cf_io(1) (one run on one
    resource) and the profile family of each application, not its curve. The family
    curve is the per-n median (``method="median"``, default) or the cubic fit of Fig. 11
    (``"cubic"``), which on the FORGE data peaks at an interpolated n = 3 for the Peak
    family although 86.6 % of its curves peak at n = 2 (docs/iosched.md).

    ``bw``: the curves, one row per curve; ``profiles``: each curve's profile family;
    ``degree``: the polynomial's degree (``cubic``).
    """
    check_param("method", method, method in FAMILY_CURVES, " or ".join(FAMILY_CURVES))
    if method == "median":
        fits = profile_medians(bw, profiles)
    else:
        fits = profile_fits(bw, profiles, degree=degree)
    shape = np.vstack([fits[p] / fits[p][0] for p in profiles])
    return np.where(np.isfinite(bw), bw[:, :1] * shape, np.nan)


def ost_curves(n_curves: int = 301, n_max: int = 8, *, seed: int = 0) -> CurveSet:
    """PARAMETRIC OST curves (the paper's BeeGFS data set is not public).

    Families and shares are iosight's assumptions, shaped after Fig. 2 of Bandet et al. (2024)
    (most configurations gain from more OSTs): Ascent 55 % (b(n) = n / (1 + (n-1)/s),
    saturation s in [1, 8]), Neutral 20 % (flat, +-5 % noise), Peak 15 % (rises then
    falls after a peak in 2..n_max-1), Descent 10 % (b(n) = 1 / (1 + d (n - 1)),
    d in [0.05, 0.3]); b(1) is log-uniform in [100, 5000] MB/s.

    ``n_curves``: how many curves; ``n_max``: the largest OST count; ``seed``: the random seed.
    """
    check_param("n_curves", n_curves, n_curves >= 1, "a positive integer")
    check_param("n_max", n_max, n_max >= 3, "at least 3")
    rng = np.random.default_rng(seed)
    n = np.arange(1, n_max + 1, dtype=float)
    kind = rng.choice(4, size=n_curves, p=[0.55, 0.2, 0.15, 0.1])
    s = rng.uniform(1, 8, n_curves)[:, None]
    asc = n / (1 + (n - 1) / s)
    neutral = 1 + rng.uniform(-0.05, 0.05, (n_curves, n_max))
    neutral[:, 0] = 1
    peak_at = rng.integers(2, n_max, n_curves)[:, None]
    rise = rng.uniform(0.2, 0.8, n_curves)[:, None]
    peak = np.where(
        n <= peak_at, 1 + rise * (n - 1), 1 + rise * (peak_at - 1) - rise * (n - peak_at)
    )
    peak = np.maximum(peak, 0.2)
    d = rng.uniform(0.05, 0.3, n_curves)[:, None]
    desc = 1 / (1 + d * (n - 1))
    shape = np.choose(kind[:, None], [asc, neutral, peak, desc])
    b1 = np.exp(rng.uniform(np.log(100), np.log(5000), n_curves))[:, None]
    names = tuple(f"ost-param-{i:03d}" for i in range(n_curves))
    return CurveSet(names=names, bw=b1 * shape, source=f"parametric OST curves (seed {seed})")


def load_curves_csv(path: Path) -> CurveSet:
    """User curves from a CSV with columns ``name,n,bandwidth`` (one row per point).

    Points are interpolated as in :func:`interpolate_grid`; every curve must be
    measured at n = 1 and all are cut to the shortest curve's largest n.

    ``path``: the CSV file.
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise IosightError(f"curve file {path} does not exist")
    df = pd.read_csv(path)
    need = {"name", "n", "bandwidth"}
    if not need <= set(df.columns):
        raise IosightError(f"{path}: needs columns name,n,bandwidth; found {list(df.columns)}")
    if (df["n"] < 1).any() or (df["bandwidth"] <= 0).any():
        raise IosightError(f"{path}: n must be >= 1 and bandwidth > 0")
    groups = list(df.sort_values("n").groupby("name", sort=True))
    if any(g["n"].min() != 1 for _, g in groups):
        raise IosightError(f"{path}: every curve needs a point at n = 1")
    n_max = int(min(g["n"].max() for _, g in groups))
    bw = np.vstack([interpolate_grid(g["n"], g["bandwidth"], n_max)[0] for _, g in groups])
    return CurveSet(names=tuple(str(k) for k, _ in groups), bw=bw, source=str(path))
