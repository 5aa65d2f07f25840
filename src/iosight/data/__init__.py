"""Public data sets on demand: pinned URLs with sha256, one data directory (``$IOSIGHT_DATA``)."""

from iosight.data._catalog import DATASETS, DataFile, DataSet
from iosight.data._examples import example_logs
from iosight.data._fetch import data_dir, dataset, dataset_path, fetch, fetch_hint, locate

__all__ = [
    "DATASETS",
    "DataFile",
    "DataSet",
    "data_dir",
    "dataset",
    "dataset_path",
    "example_logs",
    "fetch",
    "fetch_hint",
    "locate",
]
