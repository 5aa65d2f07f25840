"""Files that ship inside the package (platform descriptions, example inputs), found by
name, so a command given one works from any folder, not only from a checkout."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from iosight._errors import IosightError


def shipped_names(package: str, folder: str, suffix: str) -> list[str]:
    """Names (without ``suffix``) of the files ``folder`` of ``package`` ships."""
    root = resources.files(package) / folder
    return sorted(p.name.removesuffix(suffix) for p in root.iterdir() if p.name.endswith(suffix))


def read_path_or_shipped(
    path_or_name: str | Path, package: str, folder: str, suffix: str, what: str
) -> tuple[str, str]:
    """``(text, source)`` of a file given by its path or, when no such file exists, of
    the shipped one given by its bare name (``titan``, ``titan.yaml``); anything else
    is an :class:`IosightError` naming ``what`` was looked for and the shipped names."""
    p = Path(path_or_name)
    if p.is_file():
        return _read_text(p), str(p)
    name = p.name.removesuffix(suffix)
    names = shipped_names(package, folder, suffix)
    if p.parent != Path(".") or name not in names:
        raise IosightError(
            f"no {what} file {str(path_or_name)!r}; give a path or one of the shipped "
            f"{what}s: {', '.join(names)}"
        )
    return (resources.files(package) / folder / f"{name}{suffix}").read_text(), name + suffix


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise IosightError(f"{path}: not a text file") from None
    except OSError as err:
        raise IosightError(f"{path}: cannot read it ({err.strerror})") from None
