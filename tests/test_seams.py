"""The package layout holds: no import cycle, no reach into another package's private
modules, no pyplot backend switch in library code. Checked on the source (every import
statement, inside functions too), so a new module cannot quietly break it."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Protocol

import iosight

SRC = Path(iosight.__file__).parent
# modules that may choose a matplotlib backend: the command's entry point, nothing else
ENTRY_POINTS = {"iosight.__main__", "iosight.cli"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) for every module of iosight."""
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


MODULES = _modules()


def _package(module: str) -> str:
    return module if MODULES[module][1] else module.rpartition(".")[0]


def _imports(module: str) -> list[tuple[str, ast.AST]]:
    """(imported module, statement) for every import in ``module``, nested ones included."""
    tree = ast.parse(MODULES[module][0].read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = _package(module).split(".")[
                    : len(_package(module).split(".")) - node.level + 1
                ]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub if sub in MODULES else base, node))
    return found


def _inside(module: str, package: str) -> bool:
    own = _package(module)
    return own == package or own.startswith(package + ".")


def test_no_module_imports_another_packages_private_module():
    bad = []
    for module in MODULES:
        for target, node in _imports(module):
            parts = target.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and part != "__init__":
                    if target in MODULES and not _inside(module, ".".join(parts[:i])):
                        bad.append(f"{module}:{node.lineno} imports {target}")
                    break
    assert bad == []


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_benchmarks_use_only_the_public_api():
    """Benchmarks measure what a user calls: no ``iosight`` module starting with ``_``."""
    bad = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                parts = name.split(".")
                if parts[0] == "iosight" and any(p.startswith("_") for p in parts[1:]):
                    bad.append(f"{path.name}:{node.lineno} imports {name}")
    assert bad == []


def _graph() -> dict[str, set[str]]:
    """module -> modules its imports run: the target and its enclosing packages' __init__
    (the ones not already being imported as the module's own parents)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for target, _ in _imports(module):
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                dep = ".".join(parts[:i])
                if dep in MODULES and dep != module and not _inside(module, dep):
                    graph[module].add(dep)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_backend_switch_or_pyplot_in_library_code():
    bad = []
    for module, (path, _) in MODULES.items():
        if module in ENTRY_POINTS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if (
                call
                and node.func.attr == "use"
                and getattr(node.func.value, "id", "") == "matplotlib"
            ):
                bad.append(f"{module}:{node.lineno} calls matplotlib.use")
        bad += [f"{module} imports pyplot" for t, _ in _imports(module) if t == "matplotlib.pyplot"]
    assert bad == []


ROOT = BENCHMARKS.parent
# Text a user of the package does not have: the design notes and method notes kept beside
# the checkout, the paper copies, and papers cited by those copies' numbers ("(004)",
# "004 §VI", "Table II of 004", "seed paper 003"). A path into the ``shared`` folder may
# name only its data, ``darshan-logs`` and ``datasets`` (where tests and ``iosight data
# fetch`` look for public data), or the folder itself as a place data is looked up
# (``../shared``); papers are cited by authors, year and section, and iosight's readings
# of them are in docs/methods.md.
OUTSIDE_REFERENCE = re.compile(
    r"\bDESIGN\.md|\bDESIGN notes|\bNOTES\b|\bmethods/|\bseeds/"
    r"|\(00\d\)|\b00\d §|\bof 00\d\b|\bseed (paper )?00\d"
    r"|\bshared/(?!darshan-logs\b|datasets\b)"
)


def _outside_references(paths: list[Path]) -> list[str]:
    """``file:line: text`` for every line of ``paths`` that cites a file outside the repository."""
    return [
        f"{path}:{n}: {line.strip()}"
        for path in paths
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE_REFERENCE.search(line)
    ]


def test_no_reference_to_a_file_outside_the_repository():
    """Source and docs stand alone: what they cite is in the repository or a published paper."""
    paths = sorted(SRC.rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md"))
    assert _outside_references(paths + [ROOT / "README.md"]) == []


def test_the_reference_finder_finds_references(tmp_path):
    text = tmp_path / "x.md"
    lines = [
        "as read in methods/NOTES.md §3",
        "Bandet, Boito, Pallez (004), §III",
        "the conclusions (004 §VI)",
        "Table II of 004; seed paper 003",
        "Layout (DESIGN.md, contract)",
        "the paper in `shared/seeds/002_…`",
        "kept: `../shared/darshan-logs` and shared/datasets/summit",
        "kept: tests that need `../shared` skip without it; Snyder et al., 2016, §II",
    ]
    text.write_text("\n".join(lines))
    found = [s.split(": ", 1)[1] for s in _outside_references([text])]
    assert found == lines[:6]


MAX_FUNCTION_LINES = 80  # of code: a function's docstring is not counted


def _docstring_lines(node: ast.AST) -> int:
    body = getattr(node, "body", [])
    first = body[0] if body else None
    is_doc = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
              and isinstance(first.value.value, str))  # fmt: skip
    return first.end_lineno - first.lineno + 1 if is_doc else 0


def _long_functions(tree: ast.AST, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    return [
        (node.name, length)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := node.end_lineno - node.lineno + 1 - _docstring_lines(node)) > limit
    ]


def test_no_function_is_longer_than_80_lines_of_code():
    """Small functions that do one thing: none in src/ over 80 lines, not counting its
    docstring (a long one is split by what its parts do)."""
    long = [f"{module}.{name}: {n} lines" for module, (path, _) in MODULES.items()
            for name, n in _long_functions(ast.parse(path.read_text()))]  # fmt: skip
    assert long == []


def test_the_length_check_counts_code_not_docstrings():
    doc = '    """' + "\n".join(["a docstring line"] * 100) + '"""\n'
    code = "".join(f"    x{i} = {i}\n" for i in range(81))
    assert _long_functions(ast.parse("def f():\n" + doc + "    return 1\n")) == []
    assert _long_functions(ast.parse("def g():\n" + code)) == [("g", 82)]


def _undocumented(obj: object, name: str) -> list[str]:
    """``name`` if ``obj`` (a function or class) has no docstring of its own, and each
    public method or property of a class with none (nor one it overrides)."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        return []  # a constant
    missing = [] if obj.__doc__ else [name]
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            func = getattr(member, "fget", None) or getattr(member, "__func__", member)
            if attr.startswith("_") or not inspect.isfunction(func) or func.__doc__:
                continue
            if not any(getattr(getattr(base, attr, None), "__doc__", None)
                       for base in obj.__mro__[1:]):  # fmt: skip
                missing.append(f"{name}.{attr}")
    return missing


def test_every_public_name_has_a_docstring():
    """What a notebook user calls (every name a package exports, and the public methods
    of its classes) says what it does."""
    missing = []
    for module, (_, package) in sorted(MODULES.items()):
        if package:
            mod = importlib.import_module(module)
            for name in getattr(mod, "__all__", []):
                missing += _undocumented(getattr(mod, name), f"{module}.{name}")
    assert missing == []


# Parameters (after scikit-learn's test_docstring_parameters.py, in iosight's light style):
# a parameter is documented when its docstring names it in double backticks (``name``:
# what it is; or ``name=value``, ``name(args)``) or in a numpydoc Parameters or
# Attributes entry (``name : type``); a dataclass field also by the comment on its line.
# The docstring of a class covers its constructor; a method that overrides one may rely on
# the base's docstring.


_SECTION = re.compile(r"^(\s*)(Parameters|Other Parameters|Attributes)\n\1-{3,}$", re.M)
_ENTRY = re.compile(r"(\*{0,2}\w+(?:,\s*\*{0,2}\w+)*)\s*(?::.*)?")


def _names_documented(doc: str) -> set[str]:
    """Every name ``doc`` documents: quoted in double backticks, or an entry (``name : type``,
    ``a, b : type`` or a bare ``a, b``) of a numpydoc Parameters or Attributes section."""
    names = set(re.findall(r"``\*{0,2}(\w+)(?:[=(][^`]*)?``", doc))
    for section in _SECTION.finditer(doc):
        indent = section.group(1)
        for line in doc[section.end() :].splitlines()[1:]:
            if line.strip() and not line.startswith(indent + " "):
                entry = _ENTRY.fullmatch(line.strip())
                if not line.startswith(indent) or not entry or line.strip().endswith("-"):
                    break
                names |= {n.strip(" *") for n in entry.group(1).split(",")}
    return names


def _commented_fields(cls: type) -> set[str]:
    """Fields of a dataclass-like class that carry a comment on their line (or above)."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return set()
    found = set()
    for i, line in enumerate(lines):
        m = re.match(r"\s+(\w+)\s*:[^#]*(#.*)?$", line)
        if m and (m.group(2) or (i and lines[i - 1].strip().startswith("#"))):
            found.add(m.group(1))
    return found


def _parameter_gaps(obj: object) -> list[tuple[str, list[str]]]:
    """``(name, undocumented parameters)`` for a function or a class (its constructor and
    public methods) that leaves some out."""

    def params(func) -> list[str]:
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            return []
        return [p for p in sig.parameters if p not in ("self", "cls")]

    def gaps(name: str, func, doc: str, extra: set[str] = frozenset()) -> list:
        known = _names_documented(doc) | extra
        left = [p for p in params(func) if p not in known]
        return [(name, left)] if left else []

    if inspect.isfunction(obj):
        return gaps(obj.__name__, obj, obj.__doc__ or "")
    if not inspect.isclass(obj):
        return []
    init = vars(obj).get("__init__")
    own = (obj.__doc__ or "") + (getattr(init, "__doc__", None) or "")
    no_init = obj.__init__ is object.__init__ or getattr(obj, "_is_protocol", False)
    found = [] if no_init else gaps(obj.__name__, obj, own,
                                                            _commented_fields(obj))  # fmt: skip
    for attr, member in vars(obj).items():
        func = getattr(member, "__func__", member)
        if attr.startswith("_") or not inspect.isfunction(func):
            continue
        docs = [getattr(getattr(c, attr, None), "__doc__", None) or "" for c in obj.__mro__]
        found += gaps(f"{obj.__name__}.{attr}", func, "\n".join(docs))
    return found


def _public_parameter_gaps() -> dict[str, list[str]]:
    """``module.name`` -> undocumented parameters, over every name a package exports."""
    seen, found = set(), {}
    for module, (_, package) in sorted(MODULES.items()):
        if not package:
            continue
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            for qual, left in _parameter_gaps(obj):
                found[f"{module}.{qual}"] = left
    return found


def test_every_public_parameter_is_documented():
    """What a notebook user passes is documented where it is called."""
    assert _public_parameter_gaps() == {}


def test_the_parameter_check_finds_an_undocumented_parameter():
    def documented(warehouse, name, *, seed=0, top=5, alpha=1, beta=1, **options):
        """Read ``warehouse``; ``name``: the table; ``**options`` go to the reader (say,
        ``top=3``), called as ``beta(x)``.

        Parameters
        ----------
        seed : int
            The random seed.
        alpha
            Shape parameter.

        Returns
        -------
        gamma
        """

    def undocumented(warehouse, ident, top=5, gamma=0):
        """The ``top`` jobs like job ``identity`` in a warehouse.

        Returns
        -------
        gamma
        """

    class Point:
        """A point."""

        def __init__(self, x: float, y: float = 0.0) -> None:  # y: no comment, no docs
            """At ``x``."""

        def moved(self, dx: float) -> Point:
            """The point moved by ``dx``."""

    class Source(Protocol):
        """A source (never constructed: its generated ``__init__`` is no API)."""

        def poll(self, at: float) -> None:
            """One step."""

    assert _parameter_gaps(documented) == []
    assert _parameter_gaps(Source) == [("Source.poll", ["at"])]
    assert _parameter_gaps(undocumented) == [("undocumented", ["warehouse", "ident", "gamma"])]
    assert _parameter_gaps(Point) == [("Point", ["y"])]
