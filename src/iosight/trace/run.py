"""``python -m iosight.trace.run [--log-dir DIR] prog.py [args...]`` (or ``-m module``).

Traces one unchanged Python program in this interpreter, as ``iosight trace`` does for
a child process.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys

from iosight._errors import IosightError


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m iosight.trace.run")
    parser.add_argument("--log-dir", default=os.environ.get("IOSIGHT_TRACE_LOG_DIR", "."))
    parser.add_argument("-m", dest="module", help="run a library module as a script")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if not args.module and not args.program:
        parser.error("give a program (prog.py [args]) or -m module [args]")
    from iosight.trace._activate import activate_from_env

    os.environ["IOSIGHT_TRACE_LOG_DIR"] = args.log_dir
    run = ["-m", args.module] if args.module else []
    exe = " ".join([sys.executable, *run, *args.program])
    os.environ["IOSIGHT_TRACE_OPTIONS"] = json.dumps({"exe": exe})
    try:
        activate_from_env()
    except IosightError as err:
        parser.exit(1, f"{parser.prog}: error: {err}\n")
    if args.module:
        sys.argv = [args.module, *args.program]
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(args.program)
        sys.path.insert(0, os.path.dirname(os.path.abspath(args.program[0])))
        runpy.run_path(args.program[0], run_name="__main__")


if __name__ == "__main__":
    main()
