"""Saving and loading fitted models as data, never as code: one folder per model.

A model folder holds ``metadata.json`` (the format name and version, the model's kind,
its settings and what fitting found), ``model.json`` (the fitted objects as a tree of
plain values) and the estimators that tree names: scikit-learn ones in
``estimators.skops`` (skops.io, loaded with an explicit list of trusted types) and
XGBoost models as ``xgboost-<i>.ubj`` (XGBoost's own format). Nothing is unpickled:
loading a pickle can run any code in it, and ``iosight serve`` loads models from a
warehouse folder that others may write to, so a pickle or joblib file where a model
should be is refused with one line.

A save writes a temporary folder beside the target, syncs it to disk and renames it into
place (the old folder is moved aside first and removed last), so a save killed at any
point leaves the old model loadable.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iosight._errors import IosightError

if TYPE_CHECKING:
    import pandas as pd

FORMAT = "iosight-model"
VERSION = 1  # 1: model.json + estimators.skops + xgboost-<i>.ubj (iosight 0.x, no pickle)
METADATA, TREE, ESTIMATORS = "metadata.json", "model.json", "estimators.skops"
_HEAD = ("format", "version", "kind")  # the keys metadata.json starts with
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
_PICKLE_MAGIC = b"\x80"  # protocol 2 and later start with PROTO
#: skops types trusted beyond its defaults: scikit-learn's tree structure (plain arrays)
SKOPS_TRUSTED = ("sklearn.tree._tree.Tree",)


@dataclass(frozen=True)
class Prediction:
    """What every model's ``predict`` returns: the model's name and a table with one row
    per prediction, whose columns the model's ``predict`` documents."""

    model: str
    table: pd.DataFrame


@dataclass(frozen=True)
class ModelKind:
    """What a model folder may hold for one kind of model.

    ``types`` are the classes ``model.json`` may name (dataclasses rebuilt from their
    fields, XGBoost models from their ``.ubj`` file); ``trusted`` the skops types loaded
    beyond :data:`SKOPS_TRUSTED`; ``retrain`` the command that makes a new model.
    """

    name: str
    retrain: str
    types: tuple[type, ...] = ()
    trusted: tuple[str, ...] = ()

    def type_named(self, name: str) -> type:
        for t in self.types:
            if t.__name__ == name:
                return t
        raise IosightError(f"a {self.name} holds no object of type {name!r}")


def save_model(
    target: Path,
    kind: ModelKind,
    metadata: dict,
    fitted: Any,
    extra: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``metadata`` and the ``fitted`` objects as a model folder at ``target``,
    atomically; ``extra(folder)`` may add files (tables) before it is moved into place."""
    target = Path(target)
    _check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _recover(target)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()  # as any folder is made (the umask's mode), not private as mkdtemp's
    try:
        writer = _Writer(tmp, kind)
        tree = writer.encode(fitted)
        writer.finish()
        _write_json(tmp / TREE, tree)
        if extra is not None:
            extra(tmp)
        head = dict(zip(_HEAD, (FORMAT, VERSION, kind.name), strict=True))
        _write_json(tmp / METADATA, {**head, **metadata})
        _sync_folder(tmp)
        _swap_in(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def load_model(source: Path, kind: ModelKind) -> tuple[dict, Any]:
    """The metadata (less the format's own keys) and fitted objects of a folder written by
    :func:`save_model`; the metadata is checked (:func:`read_metadata`) first."""
    folder = _readable(Path(source))
    metadata = {k: v for k, v in read_metadata(folder, kind).items() if k not in _HEAD}
    tree = _read_json(folder / TREE, kind)
    try:
        return metadata, _Reader(folder, kind).decode(tree)
    except IosightError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OSError) as err:
        msg = f"{type(err).__name__}: {err}".splitlines()[0][:200]
        raise IosightError(f"{folder} is not a {kind.name} iosight can read ({msg})") from None


def read_metadata(source: Path, kind: ModelKind) -> dict:
    """``metadata.json`` of a model folder, checked: no pickle beside it, this format,
    this kind and this version."""
    folder = _readable(Path(source))
    if not folder.is_dir():
        raise IosightError(f"no {kind.name} at {folder}; make one with '{kind.retrain}'")
    _refuse_pickles(folder, kind)
    md = _read_json(folder / METADATA, kind)
    if not isinstance(md, dict) or md.get("format") != FORMAT:
        raise IosightError(
            f"{folder} holds no {FORMAT} metadata (a model saved by an older iosight?); "
            f"make a new model with '{kind.retrain}'"
        )
    if md.get("kind") != kind.name:
        raise IosightError(f"{folder} holds a {md.get('kind')}, not a {kind.name}")
    if md.get("version") != VERSION:
        raise IosightError(
            f"{folder} was saved in {FORMAT} version {md.get('version')!r}; this iosight "
            f"reads version {VERSION}: make a new model with '{kind.retrain}'"
        )
    return md


def is_model_folder(path: Path) -> bool:
    """A folder holding a ``metadata.json``: a model saved by any iosight."""
    return (path / METADATA).is_file()


def _refuse_pickles(folder: Path, kind: ModelKind) -> None:
    """One line for a pickle where a model should be: never unpickled."""
    for f in sorted(folder.iterdir()):
        if f.suffix in PICKLE_SUFFIXES or (f.is_file() and _starts_like_pickle(f)):
            raise IosightError(
                f"{f} is a pickle file (a model saved by an older iosight, or placed there); "
                "iosight does not load pickles, as loading one can run any code in it: "
                f"make a new model with '{kind.retrain}'"
            )


def _starts_like_pickle(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(1) == _PICKLE_MAGIC


def _read_json(path: Path, kind: ModelKind) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise IosightError(
            f"{path.parent} is not a model directory (no {path.name}); "
            f"make a {kind.name} with '{kind.retrain}'"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise IosightError(f"{path} is not valid JSON ({err})") from None


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, default=_json_value))


def _json_value(value: Any) -> Any:
    """numpy scalars and arrays in metadata as numbers and lists; anything else as text."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    return str(value)


# -- atomic replacement -------------------------------------------------------------------


def _aside(target: Path) -> Path:
    return target.parent / f".{target.name}.old"


def _check_replaceable(target: Path) -> None:
    """Only a missing or empty folder, or a model folder, is replaced by a save."""
    if target.exists() and not (
        target.is_dir() and (is_model_folder(target) or not any(target.iterdir()))
    ):
        raise IosightError(f"{target} exists and is not a model folder; choose another path")


def _recover(target: Path) -> None:
    """Put back the old folder of a save killed between its two renames."""
    if not target.exists() and _aside(target).is_dir():
        os.rename(_aside(target), target)


def _readable(path: Path) -> Path:
    """``path``, or the old folder a killed save left aside while ``path`` is missing."""
    return _aside(path) if not path.exists() and _aside(path).is_dir() else path


def _swap_in(tmp: Path, target: Path) -> None:
    aside = _aside(target)
    if aside.exists():
        shutil.rmtree(aside)
    if target.exists():
        os.rename(target, aside)
    os.rename(tmp, target)
    _fsync(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


def _sync_folder(folder: Path) -> None:
    for f in folder.iterdir():
        _fsync(f)
    _fsync(folder)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- the tree of plain values -------------------------------------------------------------


def _is_xgboost(obj: Any) -> bool:
    return any(c.__module__.startswith("xgboost.") for c in type(obj).__mro__)


class _Writer:
    """Encodes fitted objects as JSON values, collecting estimators into files."""

    def __init__(self, folder: Path, kind: ModelKind) -> None:
        self.folder, self.kind = folder, kind
        self.estimators: list[Any] = []
        self.boosters = 0

    def encode(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, list):
            return [self.encode(v) for v in obj]
        if isinstance(obj, tuple):
            return {"$tuple": [self.encode(v) for v in obj]}
        if isinstance(obj, dict):
            return {"$dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if isinstance(obj, np.ndarray):
            return self._array(obj)
        if dataclasses.is_dataclass(obj) and type(obj) in self.kind.types:
            fields = {f.name: self.encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
            return {"$object": type(obj).__name__, "fields": fields}
        if type(obj).__module__ == "sklearn.pipeline" and type(obj).__name__ == "Pipeline":
            return {"$pipeline": [[n, self.encode(step)] for n, step in obj.steps]}
        if _is_xgboost(obj):
            return self._xgboost(obj)
        if type(obj).__module__.startswith("sklearn."):
            self.estimators.append(obj)
            return {"$skops": len(self.estimators) - 1}
        raise TypeError(f"cannot save a {type(obj).__qualname__} in a {self.kind.name}")

    def _array(self, a: np.ndarray) -> dict:
        if a.dtype.kind not in "biuf":
            raise TypeError(f"cannot save an array of {a.dtype} in a {self.kind.name}")
        return {"$array": a.tolist(), "dtype": a.dtype.str}

    def _xgboost(self, model: Any) -> dict:
        if type(model) not in self.kind.types:
            raise TypeError(f"cannot save a {type(model).__qualname__} in a {self.kind.name}")
        name = f"xgboost-{self.boosters}.ubj"
        self.boosters += 1
        model.save_model(self.folder / name)
        attrs = {k: self.encode(v) for k, v in vars(model).items()
                 if k.endswith("_") and not k.startswith("_")}  # fmt: skip
        return {"$xgboost": name, "type": type(model).__name__,
                "params": self.encode(model.get_params()), "attrs": attrs}  # fmt: skip

    def finish(self) -> None:
        if self.estimators:
            import skops.io as sio

            sio.dump(self.estimators, self.folder / ESTIMATORS)


class _Reader:
    """Decodes :class:`_Writer`'s values; estimators only of trusted types."""

    def __init__(self, folder: Path, kind: ModelKind) -> None:
        self.folder, self.kind = folder, kind
        self._estimators: list[Any] | None = None

    def decode(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.decode(x) for x in v]
        if not isinstance(v, dict) or len(v) == 0:
            raise self._bad(f"unexpected value {str(v)[:60]}")
        if "$tuple" in v:
            return tuple(self.decode(x) for x in v["$tuple"])
        if "$dict" in v:
            return {self.decode(k): self.decode(x) for k, x in v["$dict"]}
        if "$array" in v:
            return np.asarray(v["$array"], dtype=np.dtype(v["dtype"]))
        if "$object" in v:
            cls = self.kind.type_named(v["$object"])
            return cls(**{k: self.decode(x) for k, x in v["fields"].items()})
        if "$pipeline" in v:
            from sklearn.pipeline import Pipeline

            return Pipeline([(n, self.decode(step)) for n, step in v["$pipeline"]])
        if "$xgboost" in v:
            return self._xgboost(v)
        if "$skops" in v:
            return self.estimators()[v["$skops"]]
        raise self._bad(f"unexpected value {str(v)[:60]}")

    def _bad(self, what: str) -> IosightError:
        return IosightError(f"{self.folder / TREE} is not a {self.kind.name}: {what}")

    def _xgboost(self, v: dict) -> Any:
        model = self.kind.type_named(v["type"])()
        path = self.folder / Path(v["$xgboost"]).name
        model.load_model(path)
        model.set_params(**self.decode(v["params"]))
        for k, x in v["attrs"].items():
            setattr(model, k, self.decode(x))
        return model

    def estimators(self) -> list[Any]:
        if self._estimators is None:
            self._estimators = self._load_skops(self.folder / ESTIMATORS)
        return self._estimators

    def _load_skops(self, path: Path) -> list[Any]:
        import zipfile

        import skops.io as sio

        trusted = [*SKOPS_TRUSTED, *self.kind.trusted]
        try:
            untrusted = [t for t in sio.get_untrusted_types(file=path) if t not in trusted]
            if untrusted:
                raise IosightError(
                    f"{path} holds types iosight does not trust ({', '.join(untrusted)}); "
                    f"make a new model with '{self.kind.retrain}'"
                )
            return sio.load(path, trusted=trusted)
        except (zipfile.BadZipFile, KeyError, ValueError, OSError) as err:
            raise IosightError(f"{path} is not a skops file iosight wrote ({err})") from None
