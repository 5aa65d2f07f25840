"""Where data sets live (``$IOSIGHT_DATA``) and fetching them with pooch."""

from __future__ import annotations

import os
from pathlib import Path

from iosight._errors import IosightError, UnknownNameError
from iosight._progress import Progress, ensure_progress
from iosight.data._catalog import DATASETS, DataSet

#: a mirror of the data directory's layout (an HTTP server, a site cache) instead of GitHub
URL_ENV = "IOSIGHT_DATA_URL"


def data_dir() -> Path:
    """The one data directory: ``$IOSIGHT_DATA``, else the platform's cache dir for iosight."""
    if os.environ.get("IOSIGHT_DATA"):
        return Path(os.environ["IOSIGHT_DATA"]).expanduser()
    import pooch

    return Path(pooch.os_cache("iosight"))


def dataset(name: str) -> DataSet:
    """The data set called ``name`` (an error listing the names otherwise)."""
    if name not in DATASETS:
        raise UnknownNameError("data set", name, sorted(DATASETS))
    return DATASETS[name]


def fetch_hint(name: str) -> str:
    """The command that fetches data set ``name`` (said in errors when it is absent)."""
    return f"run `iosight data fetch {name}`"


def dataset_path(name: str, root: Path | None = None) -> Path:
    """The folder of data set ``name``, or an error naming the fetch command to run.

    ``root``: the data directory (default :func:`data_dir`).
    """
    ds = dataset(name)
    folder = (root or data_dir()) / ds.folder
    missing = [f for f in ds.files if not (folder.parent / f.path).is_file()]
    if missing:
        raise IosightError(
            f"data set {name!r} is not in {root or data_dir()} "
            f"({len(missing)} of {len(ds.files)} files missing): {fetch_hint(name)}"
        )
    return folder


def fetch(name: str, root: Path | None = None, progress: Progress | None = None) -> Path:
    """Download data set ``name`` into ``root`` (default :func:`data_dir`); return its folder.

    Files already there with the right sha256 are kept; a download whose sha256 differs
    from the pinned one is deleted and refused. ``$IOSIGHT_DATA_URL`` replaces GitHub
    with a mirror holding the same layout as the data directory.

    ``progress``: told of each file (default: silent).
    """
    import pooch

    ds = dataset(name)
    root = Path(root) if root else data_dir()
    mirror = os.environ.get(URL_ENV, "").rstrip("/")
    store = pooch.create(
        path=root,
        base_url=(mirror or "https://invalid.example") + "/",
        registry={f.path: f"sha256:{f.sha256}" for f in ds.files},
        urls={} if mirror else {f.path: f.url for f in ds.files},
        retry_if_failed=1,
    )
    pooch.get_logger().setLevel("WARNING")  # our progress says what is fetched
    progress = ensure_progress(progress)
    progress.start(len(ds.files), f"fetching {name}")
    for f in ds.files:
        try:
            store.fetch(f.path)
        except ValueError as err:  # pooch: hash mismatch, the file is removed
            raise IosightError(
                f"{f.path}: download refused, its sha256 is not the pinned one ({_first(err)})"
            ) from None
        except Exception as err:  # noqa: BLE001 - network errors of any kind: one line
            url = f"{mirror}/{f.path}" if mirror else f.url
            raise IosightError(f"{f.path}: download from {url} failed ({_first(err)})") from None
        progress.advance(1)
    progress.finish()
    return root / ds.folder


def locate(path: str | os.PathLike) -> Path:
    """``path`` if it exists, else the data-set file of that name in the data directory.

    Commands that take a public data file (``coding_job_abs_mode_False.csv``, a TOKIO
    summary) accept its bare name; when it is nowhere, the error names the fetch to run.
    """
    p = Path(path)
    if p.exists():
        return p
    for ds in DATASETS.values():
        for f in ds.files:
            if Path(f.path).name == p.name:
                local = data_dir() / f.path
                if local.is_file():
                    return local
                raise IosightError(
                    f"{path} not found; it is in data set {ds.name!r}: {fetch_hint(ds.name)}"
                )
    raise IosightError(f"{path}: no such file")


def _first(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
