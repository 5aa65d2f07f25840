"""Write-time predictions a facility can deploy: only what is known when a job starts.

The paper's pipeline (Xie et al., 2019, §IV) fits one static model on the first 70% of the
year. On TOKIO-ABC the benchmarks run at fixed scales and the file systems drift (per
configuration medians drop 20-50% in August 2017), so iosight adds, on the same
chronological split:

- the **online median**: the median write time of the previous ``n_prev`` runs of the
  same configuration (system, benchmark, process count) that had *ended* before the job
  started;
- the **iosight predictor**: ``log(time) = log(offset) + r + c``. The offset is the
  median of the configuration's previous ``offset_runs`` runs, moved towards the
  **same-session estimate** when there is one: TOKIO runs its benchmarks on a file
  system minutes apart, so when another configuration of the same system and scale
  ended less than ``SESSION_H`` before the job started, its time times the median ratio
  of the two configurations in their earlier shared sessions estimates the job's time.
  How far to move (a weight in ``SESSION_WEIGHTS``) is learned at every refit: the
  weight whose offset puts the most training-window runs within 30% (on Edison's
  scratch file systems the two benchmarks track each other within a few percent; on
  Cori they do not). The residual ``r`` is modelled (gradient-boosted trees,
  absolute-error loss) on causal features: job features, file-system fullness and
  overload sampled before the job, the server-side load of the previous job on the
  file system, the time since the configuration last ran, the configuration's and file
  system's recent residuals, and the residual of the file system's last run of any
  configuration with its age, and that residual again if it ran less than an hour
  before (``same-session deviation``); ``c`` is the log shift that puts the most
  training runs within 30% (write times are right-skewed). The model is retrained at
  the start of every month (walk forward) on the runs that ended before, within a
  recency window.

No-leak rule (tested): changing anything at or after a job's start changes none of its
features and none of its prediction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

#: A configuration: same system, benchmark and scale.
CONFIG = ("system", "app", "nprocs")
#: Columns known when a job starts (its request and the pre-job snapshots).
KNOWN_AT_START = (
    "m*n",
    "K",
    "m*n*K",
    "max rank bytes",
    "fullest OST %",
    "average OST %",
    "overloaded OSTs",
    "overloaded OSSes",
    "OSTs in service",
    "placement radius",
    "lag written GiB/s",
    "lag read GiB/s",
    "lag OSS CPU",
    "lag MDS CPU",
    "lag age h",
)
DAY = 86400.0
#: Runs on a file system less than this many hours apart belong to one session.
SESSION_H = 1.0
#: Weights of the same-session estimate in the predictor's offset, learned at each refit
#: (0: the configuration's median only; ties go to the smaller weight).
SESSION_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Which earlier run of the session gives the same-session estimate (OnlineSettings.session).
SESSION_SIBLINGS = ("same scale", "any scale", "none")


@dataclass(frozen=True, kw_only=True)
class OnlineSettings:
    """Settings of the online median and the walk-forward predictor.

    ``depth``: the residual trees' depth; ``learning_rate``: the boosting's learning rate;
    ``seed``: the random seed of the residual model.
    """

    n_prev: int = 10  # runs in the online median (the baseline)
    offset_runs: int = 10  # runs in the predictor's offset median
    session: str = "same scale"  # sibling of the same-session estimate (SESSION_SIBLINGS)
    session_pairs: int = 10  # earlier shared sessions in the estimate's median ratio
    min_session_pairs: int = 3  # fewer: no estimate
    shift: bool = True  # the log shift c (False: c = 0)
    window_days: float = 120.0  # recency window of the training rows
    min_train: int = 30  # fewer training rows: predict the offset median
    trees: int = 100  # boosted trees of the residual model
    depth: int = 2
    learning_rate: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        check_param("n_prev", self.n_prev, self.n_prev >= 1, "a positive integer")
        check_param("offset_runs", self.offset_runs, self.offset_runs >= 1, "a positive integer")
        check_param("window_days", self.window_days, self.window_days > 0, "positive")
        check_param(
            "session", self.session, self.session in SESSION_SIBLINGS, str(SESSION_SIBLINGS)
        )
        check_param(
            "min_session_pairs",
            self.min_session_pairs,
            1 <= self.min_session_pairs <= self.session_pairs,
            "between 1 and session_pairs",
        )


def _ended_before(groups, start: np.ndarray, end: np.ndarray):
    """``(i, done)`` for every job ``i`` of each group: the group's jobs that ended before
    ``i`` started, in order of end time (ties by start), i.e. what was known at its start."""
    for idx in groups:
        e_sorted = idx[np.lexsort((start[idx], end[idx]))]
        ends = end[e_sorted]
        for i in idx:
            yield i, e_sorted[: np.searchsorted(ends, start[i], side="left")]


def _config_groups(samples: pd.DataFrame):
    return samples.groupby(list(CONFIG), sort=False).indices.values()


def causal_features(
    samples: pd.DataFrame, *, settings: OnlineSettings | None = None
) -> pd.DataFrame:
    """Per sample, the features known when it starts (index as ``samples``):
    ``online median`` (s; previous ``settings.n_prev`` runs), ``log offset median``
    (previous ``settings.offset_runs`` runs), ``log session estimate``
    (:func:`session_estimate`) and the residual model's inputs.

    Only runs of the same configuration that ended before the sample started are
    used; a configuration's first run falls back to the same benchmark on the system,
    then to the system (runs ended before it started); NaN if nothing ended before.

    ``settings``: the online settings (default: :class:`OnlineSettings`).
    """
    import pandas as pd

    st = settings or OnlineSettings()
    n_prev, offset_runs = st.n_prev, st.offset_runs
    start = samples["start_time"].to_numpy(float)
    end = samples["end_time"].to_numpy(float)
    t = samples["write_time"].to_numpy(float)
    logt = np.log(t)
    n = len(samples)
    log_med = np.full(n, np.nan)  # log of the online median
    last_dev = np.full(n, np.nan)  # log(last run / its online median)
    mean_dev = np.full(n, np.nan)  # mean of the last 3 such deviations
    spread = np.full(n, np.nan)  # IQR of the log times of the previous runs
    long_med = np.full(n, np.nan)  # log median of the previous offset_runs runs
    since = np.full(n, np.nan)  # days since the configuration's last run ended
    runs = np.zeros(n)
    known = list(_ended_before(_config_groups(samples), start, end))  # read twice below
    for i, done in known:
        if len(done) == 0:
            continue
        prev = done[-n_prev:]
        log_med[i] = np.median(logt[prev])
        long_med[i] = np.median(logt[done[-offset_runs:]])
        q75, q25 = np.percentile(logt[prev], [75, 25])
        spread[i] = q75 - q25
        since[i] = (start[i] - end[done[-1]]) / DAY
        runs[i] = len(done)
    fallback = np.log(_fallback_median(samples, logt, start, end))
    log_med = np.where(np.isfinite(log_med), log_med, fallback)
    long_med = np.where(np.isfinite(long_med), long_med, fallback)
    # deviations of earlier runs from their own offset median (known once they ended)
    dev = logt - long_med
    for i, done in known:
        d = dev[done][np.isfinite(dev[done])]
        if len(d):
            last_dev[i] = d[-1]
            mean_dev[i] = d[-3:].mean()
    # the file system's recent state: deviations of its last runs, any configuration
    sys_dev = np.full(n, np.nan)
    sys_last = np.full(n, np.nan)  # deviation of the system's last run (any configuration)
    sys_age = np.full(n, np.nan)  # hours since that run ended
    systems = samples.groupby("system", sort=False).indices.values()
    for i, done in _ended_before(systems, start, end):
        ok = done[np.isfinite(dev[done])]
        if len(ok):
            sys_dev[i] = dev[ok[-5:]].mean()
            sys_last[i] = dev[ok[-1]]
            sys_age[i] = (start[i] - end[ok[-1]]) / 3600
    feats = {
        "online median": np.exp(log_med),
        "log offset median": long_med,
        "log session estimate": session_estimate(samples, settings=st),
        "last deviation": last_dev,
        "mean deviation (3)": mean_dev,
        "system deviation (5)": sys_dev,
        "system last deviation": sys_last,
        "hours since system last run": sys_age,
        "same-session deviation": np.where(sys_age < SESSION_H, sys_last, 0.0),
        # exactly 0 when both medians cover the same runs (the default): left out then
        **(
            {"log online median - log offset median": log_med - long_med}
            if offset_runs != n_prev
            else {}
        ),
        "spread of previous runs": spread,
        "days since last run": since,
        "previous runs": runs,
        "log nprocs": np.log(samples["nprocs"].to_numpy(float)),
    }
    for c in KNOWN_AT_START:
        if c in samples:
            feats[c] = samples[c].to_numpy(float)
    return pd.DataFrame(feats, index=samples.index)


def session_estimate(
    samples: pd.DataFrame, *, settings: OnlineSettings | None = None
) -> np.ndarray:
    """Log write time of each sample estimated from its session (NaN where there is none).

    The sibling is the last run of another configuration of the same system (and, with
    ``session="same scale"``, the same process count) that ended less than ``SESSION_H``
    before the sample started; the estimate is the sibling's log time plus the median log
    ratio of the two configurations over their last ``session_pairs`` earlier shared
    sessions, counting only sessions whose runs ended before the sample started (NaN
    with fewer than ``min_session_pairs``). Known when the sample starts.

    ``samples``: TOKIO-ABC samples of one system; ``settings``: the online settings (default:
    :class:`OnlineSettings`).
    """
    st = settings or OnlineSettings()
    n = len(samples)
    est = np.full(n, np.nan)
    if st.session == "none" or not n:
        return est
    start = samples["start_time"].to_numpy(float)
    end = samples["end_time"].to_numpy(float)
    logt = np.log(samples["write_time"].to_numpy(float))
    cfg = samples.groupby(list(CONFIG), sort=False).ngroup().to_numpy()
    keys = ["system", "nprocs"] if st.session == "same scale" else ["system"]
    sibling = np.full(n, -1)
    groups = samples.groupby(keys, sort=False).indices.values()
    for i, done in _ended_before(groups, start, end):
        near = done[(cfg[done] != cfg[i]) & (end[done] > start[i] - SESSION_H * 3600)]
        if len(near):
            sibling[i] = near[-1]  # the last to end
    has = np.flatnonzero(sibling >= 0)
    pair = cfg[has] * (cfg.max() + 1) + cfg[sibling[has]]  # (configuration, sibling's)
    ratio = logt[has] - logt[sibling[has]]
    for key in np.unique(pair):
        members = np.flatnonzero(pair == key)
        members = members[np.argsort(end[has[members]], kind="mergesort")]
        ends = end[has[members]]
        for m in members:
            i = has[m]
            k = np.searchsorted(ends, start[i], side="left")  # shared sessions ended before
            if k >= st.min_session_pairs:
                prev = members[max(0, k - st.session_pairs) : k]
                est[i] = logt[sibling[i]] + np.median(ratio[prev])
    return est


def _fallback_median(samples, logt, start, end) -> np.ndarray:
    """Median of the runs of the same (system, app), else the system, ended before."""
    out = np.full(len(samples), np.nan)
    for keys in (["system", "app"], ["system"]):
        for idx in samples.groupby(keys, sort=False).indices.values():
            e_sorted = idx[np.argsort(end[idx], kind="mergesort")]
            ends = end[e_sorted]
            for i in idx:
                if np.isfinite(out[i]):
                    continue
                done = e_sorted[: np.searchsorted(ends, start[i], side="left")]
                if len(done):
                    out[i] = np.exp(np.median(logt[done]))
    return out


def _residual_model(st: OnlineSettings):
    """Small boosted trees on the residual (absolute-error loss: heavy tails)."""
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        SimpleImputer(strategy="median"),
        GradientBoostingRegressor(
            loss="absolute_error",
            n_estimators=st.trees,
            learning_rate=st.learning_rate,
            max_depth=st.depth,
            min_samples_leaf=10,
            subsample=0.8,
            random_state=st.seed,
        ),
    )


def best_shift(residuals: np.ndarray, within: float = 0.3) -> float:
    """The log shift ``c`` that puts the most ``residuals`` (log measured - log predicted)
    within ``within`` relative error: ``0.7 <= exp(c - e) <= 1.3``, i.e. ``e - c`` in
    ``[-log 1.3, -log 0.7]``. Write times are right-skewed, so the share within 30% is
    highest slightly above the median; ties go to the shift closest to 0."""
    e = np.sort(np.asarray(residuals, float))
    lo, hi = -np.log1p(within), -np.log1p(-within)
    cands = np.concatenate([e - hi, e - lo, [0.0]])  # window edges on a residual
    counts = np.searchsorted(e, cands + hi, side="right") - np.searchsorted(e, cands + lo, "left")
    best = np.flatnonzero(counts == counts.max())
    return float(cands[best[np.argmin(np.abs(cands[best]))]])


def session_weight(offset: np.ndarray, toward: np.ndarray, logt: np.ndarray) -> float:
    """The weight ``w`` of ``SESSION_WEIGHTS`` whose offset ``offset + w * toward`` puts
    the most of these runs (log times ``logt``) within 30%; ties go to the smaller.

    ``offset``: each run's log offset estimate; ``toward``: each run's step toward its session
    estimate.
    """
    from iosight.perfmodel._search import accuracy, relative_errors

    t = np.exp(logt)
    shares = [
        accuracy(relative_errors(np.exp(offset + w * toward), t)).get("within_30", 0.0)
        for w in SESSION_WEIGHTS
    ]
    return SESSION_WEIGHTS[int(np.argmax(shares))]


#: Features that are not inputs of the residual model (the baseline, and the session
#: estimate, which enters through the offset).
_NOT_INPUTS = ("online median", "log session estimate")


def walk_forward(
    samples: pd.DataFrame,
    test_start: float,
    *,
    settings: OnlineSettings | None = None,
    features: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Predictions for every sample starting at or after ``test_start`` (one system).

    At the start of each calendar month the session weight (:func:`session_weight`) and
    the residual model are refitted on the samples that ended before, within
    ``window_days``; they then predict that month's samples. Returns ``online median``
    and ``predicted`` (s), indexed like ``samples``.

    ``settings``: the online settings (default: :class:`OnlineSettings`); ``features``:
    :func:`causal_features` of ``samples`` when already computed.
    """
    import pandas as pd

    st = settings or OnlineSettings()
    f = features if features is not None else causal_features(samples, settings=st)
    x_cols = [c for c in f.columns if c not in _NOT_INPUTS]
    offset = f["log offset median"].to_numpy()
    logt = np.log(samples["write_time"].to_numpy(float))
    session = f["log session estimate"].to_numpy() - offset
    has_session = np.isfinite(session)
    session = np.where(has_session, session, 0.0)
    start = samples["start_time"].to_numpy(float)
    end = samples["end_time"].to_numpy(float)
    test = np.flatnonzero(start >= test_start)
    months = pd.to_datetime(start[test], unit="s").to_period("M")
    pred = np.full(len(samples), np.nan)
    x = f[x_cols].to_numpy(float)
    for month in months.unique():
        rows = test[(months == month)]
        t0 = month.start_time.timestamp()
        window = (end < t0) & (start >= t0 - st.window_days * DAY)
        known = window & has_session  # (no session estimate where the offset is NaN)
        w = 0.0
        if known.sum() >= st.min_train:
            w = session_weight(offset[known], session[known], logt[known])
        base = offset + w * session
        y = logt - base
        train = np.flatnonzero(window & np.isfinite(y))
        if len(train) < st.min_train:
            pred[rows] = np.exp(base[rows])
            continue
        xt = x[train]
        use = [j for j in range(x.shape[1]) if len(np.unique(xt[np.isfinite(xt[:, j]), j])) > 1]
        model = _residual_model(st).fit(xt[:, use], y[train])
        shift = best_shift(y[train] - model.predict(xt[:, use])) if st.shift else 0.0
        pred[rows] = np.exp(base[rows] + model.predict(x[np.ix_(rows, use)]) + shift)
    out = pd.DataFrame({"online median": f["online median"], "predicted": pred}, index=f.index)
    return out.iloc[test]


#: The candidates iosight can deploy, and the method it deploys (:func:`online_accuracy`).
CANDIDATES = ("paper pipeline (Lasso)", "online median", "iosight predictor")
DEPLOYED = "iosight deployed (chosen on validation)"
#: Method names of :func:`online_accuracy`, in report order.
METHODS = (*CANDIDATES, DEPLOYED)
#: Tie order of :func:`choose_on_validation`: the simplest candidate first.
_SIMPLEST_FIRST = ("online median", "iosight predictor", "paper pipeline (Lasso)")


def choose_on_validation(shares: dict[str, float]) -> str:
    """The candidate with the highest within-30% share on the validation windows (pooled);
    ties go to the simplest (online median, then the iosight predictor, then the paper
    pipeline)."""
    best = max(shares.values())
    return next(m for m in _SIMPLEST_FIRST if m in shares and shares[m] == best)


def _scored(test_y: np.ndarray, reported_y: np.ndarray) -> np.ndarray:
    """Mask of the test rows the paper pipeline reported (its validation rows left out):
    the reported values are the test values in order, minus the validation ones."""
    mask = np.zeros(len(test_y), bool)
    j = 0
    for i, v in enumerate(test_y):
        if j < len(reported_y) and v == reported_y[j]:
            mask[i], j = True, j + 1
    return mask


def _candidate_errors(part: pd.DataFrame, paper: pd.DataFrame, pred: pd.DataFrame):
    """Relative errors of the three candidates on the rows of ``part`` that the paper
    pipeline reported (the same rows for all three), and those rows' mask."""
    from iosight.perfmodel._search import relative_errors

    y = part["write_time"].to_numpy(float)
    keep = _scored(y, paper["measured"].to_numpy(float))
    p = pred.loc[part.index]
    return {
        CANDIDATES[0]: paper["error"].to_numpy(float),
        CANDIDATES[1]: relative_errors(p["online median"].to_numpy()[keep], y[keep]),
        CANDIDATES[2]: relative_errors(p["predicted"].to_numpy()[keep], y[keep]),
    }, keep


def online_accuracy(
    samples: pd.DataFrame,
    test: pd.DataFrame,
    paper: pd.DataFrame,
    *,
    settings: OnlineSettings | None = None,
    validation: Sequence[pd.DataFrame] = (),
    paper_validation: Sequence[pd.DataFrame] = (),
) -> pd.DataFrame:
    """Within-20% / within-30% shares of the paper pipeline, the online median and the
    iosight predictor on the same scored rows (``test`` minus the paper pipeline's
    validation rows; ``paper``: its Lasso rows of ``SearchOutcome.predictions``).
    ``samples`` holds one system's samples, ``test`` its chronological test part.

    With ``validation`` (consecutive windows of the training part, before ``test``) and
    ``paper_validation`` (per window, the paper pipeline fitted on the training rows
    before it, its Lasso rows on it), the candidate with the best within-30% share on the
    windows pooled is what iosight deploys (:data:`DEPLOYED`, its test errors are the
    chosen candidate's); columns ``chosen``, ``validation_within_30`` and
    ``validation_rows`` (scored validation rows, pooled) say which and why.
    The test period is never looked at for the choice.
    """
    import pandas as pd

    from iosight.perfmodel._search import accuracy

    if len(validation) != len(paper_validation):
        raise IosightError("every validation window needs the paper pipeline's rows on it")
    first = min(float(part["start_time"].min()) for part in [test, *validation])
    pred = walk_forward(samples, first, settings=settings)
    errors, keep = _candidate_errors(test, paper, pred)
    extra: dict[str, dict] = {m: {} for m in METHODS}
    if validation:
        windows = [
            _candidate_errors(v, p, pred)[0]
            for v, p in zip(validation, paper_validation, strict=True)
        ]
        pooled = {m: accuracy(np.concatenate([w[m] for w in windows])) for m in CANDIDATES}
        shares = {m: float(a["within_30"]) for m, a in pooled.items()}
        chosen = choose_on_validation(shares)
        errors[DEPLOYED] = errors[chosen]
        shares[DEPLOYED] = shares[chosen]
        n_rows = pooled[chosen]["samples"]  # the same scored rows for every candidate
        extra = {
            m: {"chosen": chosen, "validation_within_30": shares[m], "validation_rows": n_rows}
            for m in METHODS
        }
    apps = test["app"].to_numpy()[keep]
    rows = []
    for method, err in errors.items():
        for name in [*dict.fromkeys(apps), "all"]:
            sel = np.ones(len(err), bool) if name == "all" else apps == name
            rows.append({"method": method, "test_set": name, **accuracy(err[sel])} | extra[method])
    return pd.DataFrame(rows)
