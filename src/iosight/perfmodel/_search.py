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
reported back in raw units, as Table V does. The whole path of one training set comes from
one exact LARS-Lasso path on its Gram matrix, read at the grid values; where LARS breaks
down on near-collinear features (checked by the optimality condition) coordinate descent
with warm starts takes over. Training sets can run in parallel. Accuracy is reported on the
test samples that were not used for validation.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._progress import Progress, ensure_progress

if TYPE_CHECKING:
    import pandas as pd

SHRINKAGE_GRID = np.r_[0.0, np.geomspace(1e-3, 10.0, 40)]
MAX_ITER, TOL = 100_000, 1e-6  # the naive loop's coordinate descent, run to convergence
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


def _standardise(x: np.ndarray):
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    # a column constant on this training set (up to rounding) is not scaled up (as sklearn)
    sd[sd <= 1e-10 * np.maximum(np.abs(mu), np.finfo(float).tiny)] = 1.0
    return mu, sd


def _path(x_tr, y_tr, alphas):
    """Standardisation and coefficients for every shrinkage value (columns of ``coefs``).

    The Lasso solutions come from the exact LARS-Lasso path on the Gram matrix
    (``lars_path_gram``), linearly interpolated between its knots at the grid values (the
    path is piecewise linear in the shrinkage); shrinkage 0 is least squares (minimum norm).
    """
    from scipy.linalg import lstsq
    from sklearn.linear_model import lars_path_gram

    mu, sd = _standardise(x_tr)
    xs = (x_tr - mu) / sd
    ym = y_tr.mean()
    yc = y_tr - ym
    coefs = np.zeros((x_tr.shape[1], len(alphas)))
    pos = alphas > 0
    if (~pos).any():
        coefs[:, ~pos] = lstsq(xs, yc)[0][:, None]
    if pos.any():
        # identical columns (n twice, 1/(mnK) twice) split one coefficient arbitrarily and
        # make LARS degenerate: solve on the distinct ones, same fitted values
        _, keep = np.unique(np.round(xs, 12), axis=1, return_index=True)
        keep = np.sort(keep)
        xk = xs[:, keep]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # near-degenerate regressors
            knots, _, path_k = lars_path_gram(
                Xy=xk.T @ yc,
                Gram=xk.T @ xk,
                n_samples=len(yc),
                method="lasso",
                alpha_min=float(alphas[pos].min()),
                eps=1e-6,
            )
        path = np.zeros((xs.shape[1], path_k.shape[1]))
        path[keep] = path_k
        a = alphas[pos]
        # knots decrease; locate each a between knots j and j+1
        j = np.clip(np.searchsorted(-knots, -a, side="right") - 1, 0, len(knots) - 1)
        nxt = np.minimum(j + 1, len(knots) - 1)
        gap = knots[j] - knots[nxt]
        w = np.where(gap > 0, (knots[j] - a) / np.where(gap > 0, gap, 1.0), 0.0)
        w = np.clip(w, 0.0, 1.0)
        c = path[:, j] + w * (path[:, nxt] - path[:, j])
        c[:, a >= knots[0]] = 0.0
        # LARS can break down on near-collinear features: check optimality (the residual's
        # correlation may not exceed the shrinkage) and fall back to coordinate descent
        corr = np.abs(xs.T @ (yc[:, None] - xs @ c)) / len(yc)
        bad = corr.max(axis=0) > a * 1.05 + 1e-6
        if bad.any():  # redo from the strongest bad shrinkage down, warm-started
            redo = a <= a[bad].max()
            good = ~redo
            init = c[:, good][:, np.argmin(a[good])] if good.any() else None
            c[:, redo] = _cd_path(xs, yc, a[redo], init)
        coefs[:, pos] = c
    return mu, sd, ym, coefs


def _cd_path(
    xs: np.ndarray, yc: np.ndarray, a: np.ndarray, init: np.ndarray | None = None
) -> np.ndarray:
    """Coordinate-descent Lasso path (warm starts from ``init``, Gram), in ``a``'s order."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import lasso_path

    order = np.argsort(-a)  # strong to weak shrinkage
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, path, _ = lasso_path(
            xs, yc, alphas=a[order], precompute=True, max_iter=MAX_ITER, tol=TOL, coef_init=init
        )
    out = np.empty_like(path)
    out[:, order] = path
    return out


def path_mse(
    x_tr: np.ndarray, y_tr: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, alphas: np.ndarray
) -> np.ndarray:
    """Validation MSE of every shrinkage value in ``alphas`` for one training set.

    ``alphas`` may hold 0 (least squares); the others come from one regularisation path.
    """
    mu, sd, ym, coefs = _path(x_tr, y_tr, alphas)
    pred = ((x_val - mu) / sd) @ coefs + ym
    return np.mean((pred - y_val[:, None]) ** 2, axis=0)


def path_estimator(x_tr: np.ndarray, y_tr: np.ndarray, alphas: np.ndarray, k: int):
    """The fitted pipeline (scaler + Lasso/least squares) of path point ``alphas[k]``.

    Built from the same path the search scored, so the saved model is the one validated.
    """
    from sklearn.linear_model import Lasso, LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    mu, sd, ym, coefs = _path(x_tr, y_tr, alphas)
    scaler = StandardScaler()
    scaler.mean_, scaler.scale_, scaler.var_ = mu, sd, sd**2
    scaler.n_features_in_, scaler.n_samples_seen_ = x_tr.shape[1], len(y_tr)
    reg = LinearRegression() if alphas[k] == 0 else Lasso(alpha=float(alphas[k]))
    reg.coef_, reg.intercept_, reg.n_features_in_ = coefs[:, k].copy(), float(ym), x_tr.shape[1]
    return make_pipeline(scaler, reg)


def _chunk_mse(x, y, scale, subsets, x_val, y_val, alphas):
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
    n_jobs: int = 1,
    progress: Progress | None = None,
) -> np.ndarray:
    """Validation MSE for every (training subset, shrinkage) pair: shape (subsets, alphas)."""
    from joblib import Parallel, delayed

    subsets = subsets or all_subsets(scale)
    prog = ensure_progress(progress)
    prog.start(len(subsets), "Lasso search (training sets x shrinkage path)")
    chunks = [subsets[i : i + 16] for i in range(0, len(subsets), 16)]
    if n_jobs == 1:
        parts = []
        for ch in chunks:
            parts.append(_chunk_mse(x, y, scale, ch, x_val, y_val, alphas))
            prog.advance(len(ch))
    else:
        parts = Parallel(n_jobs=n_jobs)(
            delayed(_chunk_mse)(x, y, scale, ch, x_val, y_val, alphas) for ch in chunks
        )
        prog.advance(len(subsets))
    prog.finish()
    return np.vstack(parts)


def naive_grid_search(x, y, scale, x_val, y_val, *, subsets=None, alphas=SHRINKAGE_GRID):
    """The same grid, one independent scikit-learn fit per cell (the benchmark's baseline)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso, LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    subsets = subsets or all_subsets(scale)
    out = np.empty((len(subsets), len(alphas)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for i, sub in enumerate(subsets):
            mask = np.isin(scale, sub)
            for j, a in enumerate(alphas):
                reg = LinearRegression() if a == 0 else Lasso(alpha=a, max_iter=MAX_ITER, tol=TOL)
                model = make_pipeline(StandardScaler(), reg).fit(x[mask], y[mask])
                out[i, j] = np.mean((model.predict(x_val) - y_val) ** 2)
    return out


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
    i, j = np.unravel_index(np.nanargmin(grid), grid.shape)
    mask = np.isin(scale, subsets[i])
    k = int(cols[j])
    est = path_estimator(x[mask], y[mask], alphas[k:], 0)  # the same warm-start sequence
    return Candidate(family, tuple(subsets[i]), {"alpha": float(alphas[k])}, float(grid[i, j]), est)


def fit_tree_family(family, x, y, scale, x_val, y_val, subsets, seed) -> Candidate:
    """A tree ensemble: training set and settings chosen by validation MSE, like Lasso."""
    best = None
    for sub in subsets:
        mask = np.isin(scale, sub)
        for params in TREE_GRIDS[family]:
            est = make_tree(family, params, seed).fit(x[mask], y[mask])
            v = float(np.mean((est.predict(x_val) - y_val) ** 2))
            if best is None or v < best.val_mse:
                best = Candidate(family, tuple(sub), params, v, est)
    return best


def relative_errors(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Formula 2: ``(t' - t) / t``; > 0 overestimates, < 0 underestimates."""
    return (np.asarray(pred) - np.asarray(true)) / np.asarray(true)


def accuracy(err: np.ndarray) -> dict[str, float]:
    """Shares within 20% / 30%, over/under-estimation, median |error| (§IV-C, §IV-D)."""
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
    """Everything :func:`search_models` found: candidates, accuracy and the MSE grid."""

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
    n_jobs: int = 1,
    progress: Progress | None = None,
) -> SearchOutcome:
    """Search every family on training rows ``x, y`` (grouped by ``scale``).

    ``test_sets`` names the test set of each test row (e.g. ``small``, ``medium``,
    ``unconverged``); a random ``val_share`` of the test rows is the validation set and the
    rest is reported.
    """
    import pandas as pd

    check_param("val_share", val_share, 0 < val_share < 1, "in (0, 1)")
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
    mse = lasso_grid_search(
        x, y, scale, x_val, y_val, subsets=subsets, alphas=alphas, n_jobs=n_jobs, progress=progress
    )
    tree_subsets = _tree_subsets(subsets)
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
            cands[fam] = fit_tree_family(fam, x, y, scale, x_val, y_val, tree_subsets, seed)
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
