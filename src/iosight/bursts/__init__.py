"""System-level I/O burst labels, statistics and forecasts (Saeedizade et al. §IV-V)."""

from iosight.bursts._analysis import (
    DIRECTIONS,
    BurstAnalysis,
    analyze_bursts,
    burst_runs,
    deviation_histogram,
    run_length_table,
)
from iosight.bursts._features import (
    EMA_MINUTES,
    FEATURE_SETS,
    ema,
    ema_span_bins,
    feature_names,
    make_features,
)
from iosight.bursts._forecast import (
    BASELINES,
    DEFAULT_HORIZONS,
    MODES,
    TARGETS,
    Dataset,
    FittedModel,
    evaluate_forecasts,
    fit_model,
    make_dataset,
)
from iosight.bursts._forecaster import (
    MAX_LEAD,
    Forecaster,
    list_forecasters,
    load_forecaster,
    train_forecaster,
)
from iosight.bursts._labels import BurstLabels, choose_k, label_bursts, severity_classes
from iosight.bursts._models import MODELS, make_pipeline, model_names, search_params
from iosight.bursts._workflow import EVALUATION_TABLE, TrainResult, load_evaluation, train_bursts

__all__ = [
    "BASELINES",
    "DEFAULT_HORIZONS",
    "DIRECTIONS",
    "EMA_MINUTES",
    "EVALUATION_TABLE",
    "FEATURE_SETS",
    "MAX_LEAD",
    "MODELS",
    "MODES",
    "TARGETS",
    "Dataset",
    "FittedModel",
    "Forecaster",
    "TrainResult",
    "ema",
    "ema_span_bins",
    "evaluate_forecasts",
    "feature_names",
    "fit_model",
    "list_forecasters",
    "load_evaluation",
    "load_forecaster",
    "make_dataset",
    "make_features",
    "make_pipeline",
    "model_names",
    "search_params",
    "train_bursts",
    "train_forecaster",
    "BurstAnalysis",
    "BurstLabels",
    "analyze_bursts",
    "burst_runs",
    "choose_k",
    "deviation_histogram",
    "label_bursts",
    "run_length_table",
    "severity_classes",
]
