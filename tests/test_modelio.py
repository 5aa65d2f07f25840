"""The model folder format: atomic saves under kill, versions, pickles refused unread."""

from __future__ import annotations

import json
import pickle
import stat
import subprocess
import sys

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight._modelio import ModelKind, load_model, save_model
from tests_support import child_env, planted_pickle

KIND = ModelKind("test model", "iosight test retrain")

# saves `version` over the model at argv[1], SIGKILLed just before its argv[3]-th call of
# os.fsync / os.rename; prints each call it made, so the test knows how far it got
KILLED_SAVE = """
import os, signal, sys
from pathlib import Path
import numpy as np
from iosight._modelio import ModelKind, save_model

target, version, kill_at = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
calls = 0

def counted(real):
    def call(*args):
        global calls
        calls += 1
        if calls == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        out = real(*args)
        print(real.__name__, *args, flush=True)
        return out
    return call

os.fsync, os.rename = counted(os.fsync), counted(os.rename)
fitted = {"weights": np.arange(1000.0) * version}
save_model(target, ModelKind("test model", "iosight test retrain"), {"v": version}, fitted)
"""


def _save_killed(target, version: int, kill_at: int) -> subprocess.CompletedProcess:
    env = child_env()  # this iosight
    return subprocess.run([sys.executable, "-c", KILLED_SAVE, str(target), str(version),
                           str(kill_at)], capture_output=True, text=True, timeout=60,
                          env=env)  # fmt: skip


def test_a_save_killed_at_any_step_leaves_a_loadable_model(tmp_path):
    target = tmp_path / "models" / "m"
    save_model(target, KIND, {"v": 1}, {"weights": np.arange(1000.0)})
    for kill_at in range(1, 20):
        run = _save_killed(target, 2, kill_at)
        moved_in = any(line.startswith("rename") and line.endswith(f" {target}")
                       for line in run.stdout.splitlines())  # fmt: skip
        md, fitted = load_model(target, KIND)
        want = 2 if moved_in else 1
        assert md["v"] == want, (kill_at, run.stdout)
        assert np.array_equal(fitted["weights"], np.arange(1000.0) * want)
        if run.returncode == 0:  # the save ran to its end: every step was tried
            break
        assert run.returncode == -9, run.stderr
        save_model(target, KIND, {"v": 1}, {"weights": np.arange(1000.0)})  # the old one back
    assert run.returncode == 0 and kill_at > 4  # killed in the writes and in the swap
    assert sorted(p.name for p in target.parent.iterdir() if not p.name.startswith(".m.tmp")) == [
        "m"
    ]


def test_a_saved_folder_has_the_mode_any_new_folder_has(tmp_path):
    """A server running as another user must be able to read a saved model."""
    (tmp_path / "plain").mkdir()
    path = save_model(tmp_path / "m", KIND, {}, [1])
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE((tmp_path / "plain").stat().st_mode)


def test_another_version_or_format_is_one_clear_line(tmp_path):
    path = save_model(tmp_path / "m", KIND, {"v": 1}, [1, 2])
    md = json.loads((path / "metadata.json").read_text())
    (path / "metadata.json").write_text(json.dumps({**md, "version": 99}))
    with pytest.raises(IosightError, match="version 99; this iosight reads version 1: make a "
                       "new model with 'iosight test retrain'"):  # fmt: skip
        load_model(path, KIND)
    (path / "metadata.json").write_text(json.dumps({"format": 2, "name": "m"}))  # iosight < 0.x
    with pytest.raises(IosightError, match="holds no iosight-model metadata"):
        load_model(path, KIND)
    (path / "metadata.json").write_text(json.dumps({**md, "kind": "write model"}))
    with pytest.raises(IosightError, match="holds a write model, not a test model"):
        load_model(path, KIND)


def test_the_saved_tree_round_trips(tmp_path):
    fitted = {1: (0.5, np.array([1, 2], np.int64)), "a": [None, True, float("inf")]}
    _, back = load_model(save_model(tmp_path / "m", KIND, {}, fitted), KIND)
    assert back.keys() == fitted.keys() and back[1][0] == 0.5 and back["a"] == fitted["a"]
    assert back[1][1].dtype == np.int64 and back[1][1].tolist() == [1, 2]
    with pytest.raises(TypeError, match="cannot save a object"):
        save_model(tmp_path / "n", KIND, {}, object())
    assert not (tmp_path / "n").exists()


@pytest.mark.parametrize("planted", ["model.joblib", "model.pkl", "estimators.skops"])
def test_a_planted_pickle_is_refused_and_not_run(tmp_path, planted):
    control = tmp_path / "control"
    pickle.loads(planted_pickle(control))  # the test's pickle does run code when loaded
    assert control.is_dir()
    path = save_model(tmp_path / "m", KIND, {}, {"w": np.ones(3)})
    marker = tmp_path / "ran"
    (path / planted).write_bytes(planted_pickle(marker))
    with pytest.raises(IosightError, match=f"m/{planted} is a pickle file .* does not load "
                       "pickles, as loading one can run any code"):  # fmt: skip
        load_model(path, KIND)
    assert not marker.exists()


def test_a_folder_that_is_no_model_is_not_replaced(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(IosightError, match="exists and is not a model folder"):
        save_model(tmp_path, KIND, {}, [1])
    assert (tmp_path / "notes.txt").read_text() == "mine"
