"""Reading a user's file (a hardware TOML file, an Accelergy table, a ZigZag workload): its text and its YAML, with
one-line errors that name the file — written once for every format dsasim reads.

Each reader says what the file is (`what`: "hardware file", "Accelergy ERT file", "ZigZag workload") and, per
failure, what to do (a hint appended after "; "); the message shapes are the same for every format:
`WHAT PATH does not exist; HINT`, `WHAT PATH is a folder, not a file; HINT`, `WHAT PATH: not UTF-8 text (byte N);
HINT`, `WHAT PATH: cannot be read: REASON`, `WHAT PATH: not valid YAML (line N): PROBLEM`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["parse_yaml", "read_text"]


def _hinted(message: str, hint: str) -> str:
    return f"{message}; {hint}" if hint else message


def read_text(path: str | Path, what: str, missing_hint: str = "", folder_hint: str = "",
              encoding_hint: str = "") -> str:
    """The UTF-8 text of the user's file `path`; ValueError naming `what` and the file when it is missing, a folder,
    unreadable or not UTF-8 (the matching hint appended)."""
    path = Path(path)
    if not path.exists():
        raise ValueError(_hinted(f"{what} {path} does not exist", missing_hint))
    if path.is_dir():
        raise ValueError(_hinted(f"{what} {path} is a folder, not a file", folder_hint))
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(_hinted(f"{what} {path}: not UTF-8 text (byte {err.start})", encoding_hint)) from None
    except OSError as err:
        raise ValueError(f"{what} {path}: cannot be read: {err.strerror or err}") from None


def parse_yaml(text: str, where: str, loader: Any = None) -> Any:
    """The YAML document of `text` (a safe loader, or `loader`); ValueError `WHERE: not valid YAML (line N): ...`."""
    import yaml  # only a user with YAML files pays for the import

    try:
        return yaml.load(text, Loader=loader or yaml.SafeLoader)  # noqa: S506 -- a SafeLoader unless given one
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        problem = " ".join(str(getattr(err, "problem", None) or err).split())
        raise ValueError(f"{where}: not valid YAML{line}: {problem}") from None
