"""System-level I/O burst labels, statistics and forecasts (Saeedizade et al. §IV-V)."""

from iosight.bursts._analysis import (
    DIRECTIONS,
    BurstAnalysis,
    analyze_bursts,
)
from iosight.bursts._candidates import (
    BASELINES,
    CHOICE_MARGIN,
    CHOICE_WINDOWS,
    Candidate,
    FittedModel,
    Persistence,
    choose,
    fit_model,
)
from iosight.bursts._dataset import Dataset, make_dataset
from iosight.bursts._evaluate import (
    evaluate_forecasts,
    evaluate_tasks,
    no_new_bursts_f1,
    running_jobs_share,
)
from iosight.bursts._features import (
    feature_names,
    run_length,
)
from iosight.bursts._follow import (
    FORECASTS_TABLE,
    FollowForecasts,
)
from iosight.bursts._forecaster import (
    BurstPrediction,
    Forecaster,
    describe_choice,
    list_forecasters,
    load_forecaster,
    model_dir,
    train_forecaster,
)
from iosight.bursts._jobstate import (
    JobState,
    job_state,
    load_jobs,
)
from iosight.bursts._known import load_known
from iosight.bursts._labels import BurstLabels, label_bursts
from iosight.bursts._models import MODELS, make_pipeline
from iosight.bursts._nowcast import analog_rates, nowcast, nowcast_accuracy, unseen_bytes
from iosight.bursts._scheduler import (
    SCHED_COLUMNS,
    SCHED_JOBS,
    SCHED_SNAPSHOTS,
    SchedulerView,
    last_snapshot,
    sched_snapshot,
    scheduler_jobs,
    scheduler_view,
    set4_jobs,
    slurm_running_jobs,
)
from iosight.bursts._task import (
    TARGETS,
    BurstTask,
    ForecasterSettings,
    task_grid,
)
from iosight.bursts._workflow import (
    EVALUATION_TABLE,
    TrainResult,
    refit_forecaster,
    train_bursts,
)

__all__ = [
    "BASELINES",
    "CHOICE_MARGIN",
    "CHOICE_WINDOWS",
    "DIRECTIONS",
    "EVALUATION_TABLE",
    "FORECASTS_TABLE",
    "MODELS",
    "SCHED_COLUMNS",
    "SCHED_JOBS",
    "SCHED_SNAPSHOTS",
    "TARGETS",
    "BurstAnalysis",
    "BurstLabels",
    "BurstPrediction",
    "BurstTask",
    "Candidate",
    "Dataset",
    "FittedModel",
    "FollowForecasts",
    "Forecaster",
    "ForecasterSettings",
    "JobState",
    "Persistence",
    "SchedulerView",
    "TrainResult",
    "analog_rates",
    "analyze_bursts",
    "choose",
    "describe_choice",
    "evaluate_forecasts",
    "evaluate_tasks",
    "feature_names",
    "fit_model",
    "job_state",
    "label_bursts",
    "last_snapshot",
    "list_forecasters",
    "load_forecaster",
    "load_jobs",
    "load_known",
    "make_dataset",
    "make_pipeline",
    "model_dir",
    "no_new_bursts_f1",
    "nowcast",
    "nowcast_accuracy",
    "refit_forecaster",
    "run_length",
    "running_jobs_share",
    "sched_snapshot",
    "scheduler_jobs",
    "scheduler_view",
    "set4_jobs",
    "slurm_running_jobs",
    "task_grid",
    "train_bursts",
    "train_forecaster",
    "unseen_bytes",
]
