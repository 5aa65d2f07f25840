"""Model search (§III-B3, §IV-B) and evaluation (§IV-C, Table VI).

Lasso is searched over a shrinkage grid ``0..10`` and over training sets that are unions
of small write scales (255 non-empty subsets of 8 scales); each candidate is scored by its
MSE on a validation set (a random 20% of the test set) and the lowest wins. Shrinkage 0 is
ordinary least squares, the paper's linear baseline. Gradient boosting and random forest
(beyond the paper) get the same features, validation set and test sets, and choose their
training set and settings the same way, by validation MSE.

Notes
-----
iosight's readings: features are standardised on each training set before Lasso (the
penalty would otherwise depend on units that span 25 orders of magnitude); coefficients are
reported back in raw units, as Table V does. Features that are linear combinations of
earlier ones on a training set are left out of its fits (:func:`independent_columns`), so
every (training set, shrinkage) cell has exactly one solution. Each cell's solution is
exact, not a solver's approximation: the LARS-Lasso path of the training set gives every
grid value's support and signs, the solution is solved on that support and accepted only
when it meets the Lasso optimality conditions to 1e-9 relative (coordinate descent to a
1e-12 gap finds the support where LARS breaks down). Shrinkage 0 is scikit-learn's
``LinearRegression`` on the same columns. Training sets can run in parallel. Accuracy is
reported on the test samples that were not used for validation.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, check_seed
from iosight._progress import Progress, ensure_progress

if TYPE_CHECKING:
    import pandas as pd

SHRINKAGE_GRID = np.r_[0.0, np.geomspace(1e-3, 10.0, 40)]
MAX_ITER, TOL = 100_000, 1e-6  # scikit-learn coordinate descent (reference loop, fallback)
PAPER_WITHIN_30 = {"cetus": 0.9279, "titan": 0.9964}  # abstract: 92.79% and 99.64%
PAPER_TABLE_VI = {  # (small 20%, small 30%, medium 20%, medium 30%, unconv 20%, unconv 30%)
    "cetus": (0.9712, 0.9856, 0.6556, 0.8556, 0.4184, 0.602),
    "titan": (0.9861, 0.9965, 0.9610, 0.982, 0.1915, 0.2553),
}


@dataclass
class Candidate:
    """A searched model: family, training scales, settings and validation MSE."""

    family: str
    scales: tuple[int, ...]
    params: dict
    val_mse: float
    estimator: object = field(default=None, repr=False)


def all_subsets(scales) -> list[tuple[int, ...]]:
    """Every non-empty subset of ``scales`` (255 for 8 scales), smallest first."""
    s = sorted(set(int(x) for x in scales))
    return [c for k in range(1, len(s) + 1) for c in itertools.combinations(s, k)]


def independent_columns(xs: np.ndarray, rtol: float = 1e-8) -> np.ndarray:
    """Indices of the columns of ``xs`` not in the span of earlier ones (centred), in order.

    On a training set of few write scales many features are exact linear combinations of
    others (``n`` and ``1/n`` over two node counts, duplicated features); least squares and
    Lasso then have a whole set of equally good coefficient vectors that predict the
    validation set differently, so a cell's MSE would depend on the solver. Keeping the
    first maximal independent set of columns (Gram-Schmidt in feature order, a column is
    dependent when less than ``rtol`` of its norm is new) makes every cell's fit unique.
    """
    xc = xs - xs.mean(axis=0)
    basis: list[np.ndarray] = []
    keep = []
    for j in range(xc.shape[1]):
        v = xc[:, j].copy()
        norm = np.linalg.norm(v)
        for _ in range(2):  # re-orthogonalise once for stability
            for q in basis:
                v -= (q @ v) * q
        r = np.linalg.norm(v)
        if norm > 0 and r > rtol * norm:
            basis.append(v / r)
            keep.append(j)
    return np.array(keep, dtype=np.int64)


def _path(x_tr: np.ndarray, y_tr: np.ndarray, alphas: np.ndarray):
    """Scaler, kept columns, least-squares fit and exact Lasso coefficients of a training set.

    Returns ``(scaler, keep, ols, xm, ym, coefs)``: the fitted ``StandardScaler``, the
    independent columns (:func:`independent_columns`), the fitted ``LinearRegression`` on
    them (shrinkage 0), the centring of the kept scaled features and of ``y``, and one
    column of Lasso coefficients (over the kept columns) per value of ``alphas`` (zeros
    where ``alphas`` is 0). Returns None for a training set that cannot be fitted: fewer
    than 2 samples, or no feature that varies in it.
    """
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import StandardScaler

    if len(y_tr) < 2:
        return None
    scaler = StandardScaler().fit(x_tr)
    xs = scaler.transform(x_tr)
    keep = independent_columns(xs)
    if keep.size == 0:
        return None
    xs = xs[:, keep]
    ols = LinearRegression().fit(xs, y_tr)
    xm, ym = xs.mean(axis=0), float(y_tr.mean())
    xc, yc = xs - xm, y_tr - ym
    coefs = np.zeros((len(keep), len(alphas)))
    pos = alphas > 0
    if pos.any():
        coefs[:, pos] = _lasso_exact(xc, yc, alphas[pos])
    return scaler, keep, ols, xm, ym, coefs


def _lasso_exact(xc: np.ndarray, yc: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Lasso minimisers of ``||yc - xc w||^2 / 2n + a |w|_1`` for every ``a`` (columns).

    ``xc`` has independent columns, so each minimiser is unique.

    The LARS-Lasso path on the Gram matrix (``lars_path_gram``) gives each solution's
    support and signs (the path is piecewise linear between its knots); each solution is
    then solved exactly on its support, ``G_AA w_A = c_A - n a s_A``, and accepted only
    when it meets the optimality conditions (signs kept, no inactive correlation above
    ``a``) to 1e-9 relative. Where LARS broke down on near-collinear features, coordinate
    descent run to a 1e-12 duality gap finds the support instead.
    """
    from sklearn.linear_model import lars_path_gram

    n = len(yc)
    gram, cov = xc.T @ xc, xc.T @ yc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-degenerate regressors
        knots, _, path = lars_path_gram(
            Xy=cov,
            Gram=gram,
            n_samples=n,
            method="lasso",
            alpha_min=float(a.min()),
            eps=np.finfo(float).eps,
        )
    # knots decrease; locate each a between knots j and j+1 and interpolate
    j = np.clip(np.searchsorted(-knots, -a, side="right") - 1, 0, len(knots) - 1)
    nxt = np.minimum(j + 1, len(knots) - 1)
    gap = knots[j] - knots[nxt]
    w = np.clip(np.where(gap > 0, (knots[j] - a) / np.where(gap > 0, gap, 1.0), 0.0), 0, 1)
    start = path[:, j] + w * (path[:, nxt] - path[:, j])
    start[:, a >= knots[0]] = 0.0
    out = np.empty_like(start)
    bad = []
    for k, ak in enumerate(a):
        sol = _polish(gram, cov, n, ak, start[:, k])
        if sol is None:
            bad.append(k)
        else:
            out[:, k] = sol
    if bad:
        bad = np.array(bad)
        cd = _cd_path(xc, yc, a[bad])
        for col, k in enumerate(bad):
            sol = _polish(gram, cov, n, a[k], cd[:, col])
            out[:, k] = cd[:, col] if sol is None else sol
    return out


_KKT_RTOL = 1e-9


def _polish(gram, cov, n, a, w0) -> np.ndarray | None:
    """The exact Lasso solution with ``w0``'s support and signs, or None if not optimal."""
    from scipy.linalg import lstsq

    scale = np.abs(w0).max(initial=0.0)
    act = np.flatnonzero(np.abs(w0) > 1e-10 * scale) if scale > 0 else np.array([], int)
    w = np.zeros_like(w0)
    if act.size:
        s = np.sign(w0[act])
        w[act] = lstsq(gram[np.ix_(act, act)], cov[act] - n * a * s, cond=1e-13)[0]
        if np.any(np.sign(w[act]) != s):
            return None
    grad = (cov - gram @ w) / n  # = a * sign(w) on the support, |.| <= a elsewhere
    tol = _KKT_RTOL * a + 1e-13 * np.abs(cov).max(initial=0.0) / n
    ok = np.abs(grad) <= a + tol
    if act.size:
        ok[act] = np.abs(grad[act] - a * np.sign(w[act])) <= tol
    return w if ok.all() else None


def _cd_path(xc: np.ndarray, yc: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Coordinate-descent Lasso path (warm starts, Gram), tight gap, in ``a``'s order."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import lasso_path

    order = np.argsort(-a)  # strong to weak shrinkage
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, path, _ = lasso_path(
            xc, yc, alphas=a[order], precompute=True, max_iter=MAX_ITER, tol=1e-12
        )
    out = np.empty_like(path)
    out[:, order] = path
    return out


def path_mse(
    x_tr: np.ndarray, y_tr: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, alphas: np.ndarray
) -> np.ndarray:
    """Validation MSE of every shrinkage value in ``alphas`` for one training set.

    ``alphas`` may hold 0 (least squares); the others are exact Lasso solutions. A
    training set that cannot be fitted (see :func:`_path`) scores ``inf`` everywhere, so
    the search never picks it.
    """
    path = _path(x_tr, y_tr, alphas)
    if path is None:
        return np.full(len(alphas), np.inf)
    scaler, keep, ols, xm, ym, coefs = path
    xv = scaler.transform(x_val)[:, keep]
    pred = (xv - xm) @ coefs + ym
    if (alphas == 0).any():
        pred[:, alphas == 0] = ols.predict(xv)[:, None]
    return np.mean((pred - y_val[:, None]) ** 2, axis=0)


def path_estimator(x_tr: np.ndarray, y_tr: np.ndarray, alphas: np.ndarray, k: int):
    """The fitted pipeline (scaler + Lasso/least squares) of path point ``alphas[k]``.

    Built from the same solutions the search scored, so the saved model is the one
    validated.
    """
    from sklearn.linear_model import Lasso, LinearRegression
    from sklearn.pipeline import make_pipeline

    path = _path(x_tr, y_tr, alphas)
    if path is None:
        raise IosightError(
            f"cannot fit a model on {len(y_tr)} training sample(s) with no varying feature"
        )
    scaler, keep, ols, xm, ym, coefs = path
    coef = np.zeros(x_tr.shape[1])  # dependent columns get coefficient 0
    if alphas[k] == 0:
        reg = LinearRegression()
        coef[keep] = ols.coef_
        intercept = float(ols.intercept_)
    else:
        reg = Lasso(alpha=float(alphas[k]))
        coef[keep] = coefs[:, k]
        intercept = float(ym - xm @ coefs[:, k])
    reg.coef_, reg.intercept_, reg.n_features_in_ = coef, intercept, x_tr.shape[1]
    return make_pipeline(scaler, reg)


def _chunk_mse(x, y, scale, subsets, *, x_val, y_val, alphas):
    rows = []
    for sub in subsets:
        mask = np.isin(scale, sub)
        rows.append(path_mse(x[mask], y[mask], x_val, y_val, alphas))
    return np.array(rows)


def lasso_grid_search(
    x: np.ndarray,
    y: np.ndarray,
    scale: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    *,
    subsets: list[tuple[int, ...]] | None = None,
    alphas: np.ndarray = SHRINKAGE_GRID,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Validation MSE for every (training subset, shrinkage) pair: shape (subsets, alphas).

    Chunks of 16 training sets run on ``workers`` local threads (0: one per core; the
    fits are NumPy and scikit-learn, which release the GIL, and a thread costs no
    process start) or on the Dask cluster at ``scheduler``
    (:func:`iosight.parallel.map_items`); each cell is exact, so the grid is the same
    wherever it ran.

    ``x``: training features; ``y``: training targets; ``scale``: each training sample's write
    scale (the subsets are of these); ``x_val``: validation features; ``y_val``: validation
    targets; ``subsets``: the feature subsets (default: every one); ``alphas``: the shrinkage
    values; ``progress``: told of each subset (default: silent).
    """
    from functools import partial

    from iosight.parallel import map_items

    subsets = subsets or all_subsets(scale)
    prog = ensure_progress(progress)
    prog.start(len(subsets), "Lasso search (training sets x shrinkage path)")
    chunks = [subsets[i : i + 16] for i in range(0, len(subsets), 16)]
    parts = map_items(partial(_chunk_mse, x, y, scale, x_val=x_val, y_val=y_val, alphas=alphas),
                      chunks, workers=workers, scheduler=scheduler, threads=True,
                      on_done=lambda i, _: prog.advance(len(chunks[i])))  # fmt: skip
    prog.finish()
    return np.vstack(parts)


def naive_grid_search(
    x,
    y,
    scale,
    x_val,
    y_val,
    *,
    subsets=None,
    alphas=SHRINKAGE_GRID,
    tol: float = TOL,
    max_iter: int = MAX_ITER,
    with_converged: bool = False,
):
    """The same grid, one independent scikit-learn fit per cell (the reference).

    Each cell fits ``StandardScaler`` on its training set, keeps the same independent
    columns as the search, and fits ``LinearRegression`` (shrinkage 0) or
    ``Lasso(alpha, tol=tol, max_iter=max_iter)`` from scratch. Coordinate descent stops at
    ``tol`` (a duality gap relative to ``||y||^2``) or ``max_iter`` sweeps, so on badly
    conditioned training sets its MSEs differ from the exact ones of :func:`lasso_grid_search`
    until both are tight. ``with_converged=True`` also returns a boolean grid: False where
    coordinate descent stopped at ``max_iter`` before reaching ``tol``.

    ``x``: training features; ``y``: training targets; ``scale``: each training sample's write
    scale (the subsets are of these); ``x_val``: validation features; ``y_val``: validation
    targets; ``subsets``: the feature subsets (default: every one); ``alphas``: the shrinkage
    values.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso, LinearRegression
    from sklearn.preprocessing import StandardScaler

    subsets = subsets or all_subsets(scale)
    out = np.empty((len(subsets), len(alphas)))
    converged = np.ones(out.shape, bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for i, sub in enumerate(subsets):
            mask = np.isin(scale, sub)
            for j, a in enumerate(alphas):
                scaler = StandardScaler().fit(x[mask])
                xs = scaler.transform(x[mask])
                keep = independent_columns(xs)
                if mask.sum() < 2 or keep.size == 0:  # cannot be fitted: as the search
                    out[i, j] = np.inf
                    continue
                reg = LinearRegression() if a == 0 else Lasso(alpha=a, max_iter=max_iter, tol=tol)
                reg.fit(xs[:, keep], y[mask])
                pred = reg.predict(scaler.transform(x_val)[:, keep])
                out[i, j] = np.mean((pred - y_val) ** 2)
                converged[i, j] = a == 0 or reg.n_iter_ < max_iter
    return (out, converged) if with_converged else out


TREE_GRIDS = {
    "gradient boosting": [{"learning_rate": lr} for lr in (0.05, 0.1)],
    "random forest": [{"min_samples_leaf": leaf} for leaf in (1, 3)],
}


def make_tree(family: str, params: dict, seed: int):
    """A tree ensemble of ``family`` with ``params`` (seeded)."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    if family == "gradient boosting":
        return GradientBoostingRegressor(n_estimators=150, max_depth=3, random_state=seed, **params)
    return RandomForestRegressor(n_estimators=100, random_state=seed, **params)


def fit_linear_family(family, x, y, scale, mse, subsets, alphas) -> Candidate:
    """Best Lasso (shrinkage > 0) or least-squares (shrinkage 0) cell of the grid."""
    cols = np.flatnonzero(alphas > 0) if family == "lasso" else np.flatnonzero(alphas == 0)
    grid = mse[:, cols]
    if not np.isfinite(grid).any():
        raise IosightError(
            f"no training set can fit a {family} model: each has fewer than 2 samples "
            "or no feature that varies"
        )
    i, j = np.unravel_index(np.nanargmin(grid), grid.shape)
    mask = np.isin(scale, subsets[i])
    k = int(cols[j])
    est = path_estimator(x[mask], y[mask], alphas[k : k + 1], 0)  # exact: the cell scored
    return Candidate(family, tuple(subsets[i]), {"alpha": float(alphas[k])}, float(grid[i, j]), est)


def fit_tree_family(
    family, x, y, scale, x_val, y_val, subsets, seed, *, workers=0, scheduler=None
) -> Candidate:
    """A tree ensemble: training set and settings chosen by validation MSE, like Lasso.
    The fits of the grid run as :func:`lasso_grid_search`'s chunks do, one core each;
    the first of the lowest validation MSE in grid order wins, wherever they ran."""
    from functools import partial

    from iosight.parallel import map_items

    grid = [(tuple(sub), params) for sub in subsets for params in TREE_GRIDS[family]]
    fit = partial(_fit_tree, family, x, y, scale, x_val, y_val, seed)
    fits = map_items(fit, grid, workers=workers, scheduler=scheduler, threads=True)
    return min(fits, key=lambda c: c.val_mse)


def _fit_tree(family, x, y, scale, x_val, y_val, seed, cell) -> Candidate:
    sub, params = cell
    mask = np.isin(scale, sub)
    est = make_tree(family, params, seed).fit(x[mask], y[mask])
    return Candidate(family, sub, params, float(np.mean((est.predict(x_val) - y_val) ** 2)), est)


def relative_errors(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Formula 2: ``(t' - t) / t``; > 0 overestimates, < 0 underestimates.

    ``pred``: predicted times; ``true``: measured times.
    """
    return (np.asarray(pred) - np.asarray(true)) / np.asarray(true)


def accuracy(err: np.ndarray) -> dict[str, float]:
    """Shares within 20% / 30%, over/under-estimation, median |error| (§IV-C, §IV-D).

    ``err``: relative errors (:func:`relative_errors`).
    """
    err = np.asarray(err, dtype=float)
    if len(err) == 0:
        return {"samples": 0}
    bad = np.abs(err) > 0.3
    return {
        "samples": int(len(err)),
        "within_20": float(np.mean(np.abs(err) <= 0.2)),
        "within_30": float(np.mean(np.abs(err) <= 0.3)),
        "median_abs_error": float(np.median(np.abs(err))),
        "overestimated": float(np.mean(err > 0)),
        "underestimated": float(np.mean(err < 0)),
        "under_among_inaccurate": float(np.mean(err[bad] < 0)) if bad.any() else float("nan"),
    }


def linear_coefficients(estimator, names: list[str]) -> pd.DataFrame:
    """Selected features and coefficients in raw units (Table V), largest |effect| first."""
    import pandas as pd

    scaler, reg = estimator[0], estimator[-1]
    coef = reg.coef_ / scaler.scale_
    intercept = float(reg.intercept_ - np.sum(coef * scaler.mean_))
    keep = np.flatnonzero(reg.coef_ != 0)
    df = pd.DataFrame(
        {
            "feature": [names[i] for i in keep],
            "coefficient": coef[keep],
            "standardised": reg.coef_[keep],
        }
    )
    df = df.iloc[np.argsort(-np.abs(df["standardised"].to_numpy()), kind="mergesort")]
    top = pd.DataFrame(
        {
            "feature": ["(intercept)"],
            "coefficient": [intercept],
            "standardised": [float(reg.intercept_)],
        }
    )
    return pd.concat([top, df], ignore_index=True)


@dataclass
class SearchOutcome:
    """Everything :func:`search_models` found: candidates, accuracy and the MSE grid.

    ``candidates``: family to its fitted candidate; ``mse_grid``: validation MSE per (feature
    subset, shrinkage); ``subsets``: the feature subsets searched; ``alphas``: the shrinkage
    values searched; ``features``: the feature names, in column order.
    """

    candidates: dict[str, Candidate]
    accuracy: pd.DataFrame  # one row per (family, test set)
    predictions: pd.DataFrame  # one row per reported test sample and family
    mse_grid: np.ndarray
    subsets: list[tuple[int, ...]]
    alphas: np.ndarray
    features: list[str]


def search_models(
    x: np.ndarray,
    y: np.ndarray,
    scale: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    test_sets: np.ndarray,
    features: list[str],
    *,
    subsets: list[tuple[int, ...]] | None = None,
    alphas: np.ndarray = SHRINKAGE_GRID,
    families: tuple[str, ...] = ("lasso", "linear", "gradient boosting", "random forest"),
    val_share: float = 0.2,
    seed: int = 0,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> SearchOutcome:
    """Search every family on training rows ``x, y`` (grouped by ``scale``).

    ``test_sets`` names the test set of each test row (e.g. ``small``, ``medium``,
    ``unconverged``); a random ``val_share`` of the test rows is the validation set and the
    rest is reported. The searches run on ``workers`` local threads (0: one per core)
    or on the Dask cluster at ``scheduler``, with the same outcome.
    """
    import pandas as pd

    check_param("val_share", val_share, 0 < val_share < 1, "in (0, 1)")
    check_seed(seed)
    if len(y) < 3 or len(test_y) < 5:
        raise IosightError(
            f"too few samples to search models: {len(y)} training and {len(test_y)} test "
            "samples (need at least 3 and 5)"
        )
    rng = np.random.default_rng(seed)
    val = np.zeros(len(test_y), bool)
    val[rng.choice(len(test_y), max(1, int(round(val_share * len(test_y)))), replace=False)] = True
    x_val, y_val = test_x[val], test_y[val]
    subsets = subsets or all_subsets(scale)
    where = {"workers": workers, "scheduler": scheduler}
    mse = lasso_grid_search(
        x, y, scale, x_val, y_val, subsets=subsets, alphas=alphas, progress=progress, **where
    )
    cands: dict[str, Candidate] = {}
    for fam in families:
        if fam in ("lasso", "linear"):
            cands[fam] = fit_linear_family(fam, x, y, scale, mse, subsets, alphas)
        elif fam == "median":  # context: a constant guess, the training median
            from sklearn.dummy import DummyRegressor

            est = DummyRegressor(strategy="median").fit(x, y)
            v = float(np.mean((est.predict(x_val) - y_val) ** 2))
            cands[fam] = Candidate(fam, tuple(sorted(set(scale.tolist()))), {}, v, est)
        elif fam in TREE_GRIDS:
            cands[fam] = fit_tree_family(fam, x, y, scale, x_val, y_val, _tree_subsets(subsets),
                                         seed, **where)  # fmt: skip
        else:
            raise IosightError(
                f"unknown model family {fam!r}; choose from lasso, linear, {', '.join(TREE_GRIDS)}"
            )
    rows, preds = [], []
    rep_x, rep_y, rep_sets = test_x[~val], test_y[~val], np.asarray(test_sets)[~val]
    for fam, cand in cands.items():
        err = relative_errors(cand.estimator.predict(rep_x), rep_y)
        preds.append(
            pd.DataFrame(
                {
                    "family": fam,
                    "test_set": rep_sets,
                    "measured": rep_y,
                    "predicted": rep_y * (1 + err),
                    "error": err,
                }
            )
        )
        for name in [*dict.fromkeys(rep_sets), "all"]:
            sel = np.ones(len(err), bool) if name == "all" else rep_sets == name
            rows.append({"family": fam, "test_set": name, **accuracy(err[sel])})
    return SearchOutcome(
        cands,
        pd.DataFrame(rows),
        pd.concat(preds, ignore_index=True),
        mse,
        subsets,
        alphas,
        features,
    )


def _tree_subsets(subsets: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Tree families try the nested 'largest k scales' training sets (8 of the 255)."""
    scales = sorted({s for sub in subsets for s in sub})
    return [tuple(scales[k:]) for k in range(len(scales))]
