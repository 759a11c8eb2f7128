"""Outputs are written whole or not at all: into a temporary file in the target's folder, renamed into place.

A run interrupted (Ctrl-C) or failing half-way through writing leaves the previous file (or none) and no
temporary file, never a truncated JSON or PNG. Every writer of the library and the CLI goes through `atomic_path`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "probe_writable", "write_text_atomic"]

TEMP_MARK = ".dsasim-tmp-"  # temporary files are hidden (leading dot) and carry this mark


def _reserve(path: Path) -> Path:
    """Create an empty, uniquely named temporary file beside `path` (same folder, so the rename is atomic).

    The name keeps `path`'s suffix last, so writers that pick a format by suffix (matplotlib) see the right one;
    the file is created with mode 0o666 minus the umask, like a plain open(), so the result gets the usual
    permissions."""
    while True:
        tmp = path.parent / f".{path.stem}{TEMP_MARK}{secrets.token_hex(4)}{path.suffix}"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:  # 2**-32 chance: draw another name
            continue


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write; on success it is flushed to disk and renamed onto `path`,
    on any exception (KeyboardInterrupt included) it is deleted and `path` is left as it was. A symbolic link
    is followed: its target is replaced, the link stays."""
    path = Path(os.path.realpath(path))
    tmp = _reserve(path)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # the bytes are on disk before the name points at them
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def probe_writable(folder: str | Path) -> None:
    """Raise OSError unless a file can be created in `folder` (creates and deletes one temporary file).

    A real attempt, not os.access: it also answers for root, read-only mounts and full quotas."""
    tmp = _reserve(Path(folder) / "probe")
    tmp.unlink()
