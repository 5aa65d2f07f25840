"""Start iosight tracing when the interpreter starts (found through PYTHONPATH)."""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

try:
    from iosight.trace._activate import activate_from_env

    activate_from_env()
except Exception as _err:  # noqa: BLE001 - never break the traced program
    sys.stderr.write(f"iosight trace: not tracing this process: {_err}\n")
finally:
    # run any sitecustomize this one shadows
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    _spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if _spec is not None and _spec.loader is not None:
        _mod = importlib.util.module_from_spec(_spec)
        sys.modules["_iosight_chained_sitecustomize"] = _mod
        _spec.loader.exec_module(_mod)
