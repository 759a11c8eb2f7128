"""Loading a user's object named `MODULE:ATTR` (an importable module) or `FILE.py:ATTR` (a source file).

One loader for every place that takes user code (`dsasim demo` / `simulate` schedules; usable by `network`'s
models): whatever the module does wrong at import — a SyntaxError, an exception, `sys.exit()` — becomes one
`UserCodeError` naming the module and what it raised, never a traceback or an exit from inside dsasim.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["UserCodeError", "is_user_spec", "load_attribute", "load_module", "module_file", "split_spec"]


class UserCodeError(ValueError):
    """A `MODULE:ATTR` / `FILE.py:ATTR` that cannot be loaded; the message names the module and the cause."""


def is_user_spec(text: str) -> bool:
    """True when `text` has the form MODULE:ATTR or FILE.py:ATTR (registered names never contain ':')."""
    head, sep, tail = text.rpartition(":")
    return bool(sep and head and tail)


def split_spec(spec: str, what: str) -> tuple[str, str]:
    """(MODULE or FILE.py, ATTR) of a spec; UserCodeError when it is malformed."""
    head, sep, attr = spec.strip().rpartition(":")
    if not sep or not head or not attr:
        raise UserCodeError(f"{what} {spec!r}: give MODULE:NAME or FILE.py:NAME")
    if not attr.isidentifier():
        raise UserCodeError(f"{what} {spec!r}: {attr!r} is not a Python name")
    return head, attr


def _is_file(head: str) -> bool:
    return head.endswith(".py") or os.sep in head or (os.altsep is not None and os.altsep in head)


def module_file(spec: str) -> Path | None:
    """The source file a spec's module would be loaded from, without running it (None when not found): for
    checking that no output overwrites it. A dotted MODULE's parent packages are not imported."""
    head = spec.strip().rpartition(":")[0]
    if _is_file(head):
        return Path(head)
    if "." in head:  # finding pkg.mod would import pkg: leave it to the loader
        return None
    try:
        found = importlib.util.find_spec(head)
    except (ImportError, ValueError):
        return None
    return Path(found.origin) if found is not None and found.has_location and found.origin else None


def load_module(head: str, what: str, spec: str) -> ModuleType:
    """Import MODULE or execute FILE.py; any failure (SyntaxError, an exception, sys.exit) is a UserCodeError."""
    label = f"{what} {spec!r}: {'file' if _is_file(head) else 'module'} {head!r}"
    if _is_file(head):
        path = Path(head)
        if not path.is_file():
            raise UserCodeError(f"{label} does not exist or is not a file")
        name = f"dsasim_user_{zlib.crc32(str(path.resolve()).encode()):08x}_{path.stem.replace('-', '_')}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise UserCodeError(f"{label} cannot be loaded as Python source; give a .py file")
        module = importlib.util.module_from_spec(module_spec)
        # (dataclasses and pickling look the module up by name; run again, it reflects the file as it is now)
        sys.modules[name] = module
        loader = module_spec.loader.exec_module
        argument: Any = module
    else:
        loader, argument, name = importlib.import_module, head, None
    try:
        result = loader(argument)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - user code: SystemExit included, reported in one line
        if name is not None:
            sys.modules.pop(name, None)
        raise UserCodeError(f"{label}: {_describe(err, head)}") from None
    return module if name is not None else result


def _describe(err: BaseException, head: str) -> str:
    """One line saying what importing the user's module raised."""
    if isinstance(err, SystemExit):
        return f"it called sys.exit({err.code!r}) while being imported; a module to load must not exit"
    if isinstance(err, ModuleNotFoundError) and err.name is not None and head.startswith(err.name):
        return f"no such module ({err}); is it on PYTHONPATH?"
    if isinstance(err, SyntaxError):
        where = f"{Path(err.filename).name if err.filename else head}, line {err.lineno}"
        return f"SyntaxError at {where}: {err.msg}"
    first = str(err).strip().split("\n", 1)[0]
    return f"importing it raised {type(err).__name__}{': ' + first if first else ''}"


def load_attribute(spec: str, what: str) -> Any:
    """The object `spec` (MODULE:ATTR or FILE.py:ATTR) names; `what` ("schedule", "network") starts messages.

    Raises UserCodeError (a ValueError) for a malformed spec, a module that cannot be imported or fails while
    being imported, or a missing attribute."""
    head, attr = split_spec(spec, what)
    module = load_module(head, what, spec)
    if not hasattr(module, attr):
        public = sorted(n for n in vars(module) if not n.startswith("_"))[:12]
        raise UserCodeError(f"{what} {spec!r}: {head!r} has no attribute {attr!r}; it defines: "
                            f"{', '.join(public) or 'nothing public'}")
    return getattr(module, attr)
