"""SRAM scopes (`Scope`; `GlobalHierarchy` is the blog's name for it, kept as an alias): `with Scope(session):` or
`with GlobalHierarchy(session):` opens a scope instance whose
buffers live until it exits (rule 2 of `dsasim.traced.session`), N-way buffered with `ways=N`, or in a memory
level below the SRAM with `level=`. The Session keeps the scope stack; this is the `with` statement's handle."""

from __future__ import annotations

import os
import sys
from typing import Any

from dsasim.errors import LevelError
from dsasim.hardware import SRAM_LEVEL
from dsasim.traced import _core
from dsasim.traced.tile import Tile
from dsasim.util import is_int

__all__ = ["GlobalHierarchy", "Scope"]

ScopeInstance = _core.ScopeInstance  # one execution of a scope (a C class: the compiled core reads its fields)


class Scope(_core.ScopeFields):
    """An SRAM scope: `with Scope(session):` (the blog writes `GlobalHierarchy(session)`) frees its buffers on exit.
    It is one scope, not a hierarchy, and global only without `level=`: hence the name; the blog's stays an alias.

    `level="L1w"` opens it in a memory level below the SRAM instead, on hardware that has one (`dsasim.traced.levels`).

    `ways=N` makes it N-way buffered: each buffer's SRAM block holds N copies that successive instances use in
    turn, so the next instance's loads can overlap this one's compute; the capacity check counts N x its buffers.
    `buffers=N` is an alias of `ways=N` (the blog-style spelling; pass one of them). `name` identifies the scope
    for buffering overrides (`Session(scope_ways=...)`) and reports (default: its source line).
    """

    __slots__ = ()  # the fields (session, name, ways, _instance, level) are C fields of _core.ScopeFields

    def _init_py(self, session: _core.SessionFields, name: str | None = None, ways: int | None = None,
                 buffers: int | None = None, level: str | None = None) -> None:
        """Check and keep the arguments (the reference; see `session._bind_core`)."""
        if not isinstance(session, _core.SessionFields):  # (a Session: session.py imports this module)
            raise TypeError(f"GlobalHierarchy needs the Session to trace into as its first argument, got "
                            f"{type(session).__name__}")
        if buffers is not None:
            if ways is not None:
                raise ValueError(f"GlobalHierarchy: pass ways={ways!r} or its alias buffers={buffers!r}, not both")
            ways = buffers
        if ways is not None and (not is_int(ways) or ways < 1):
            raise ValueError(f"GlobalHierarchy {'ways' if buffers is None else 'buffers'} must be an integer >= 1 "
                             f"(1 = single, 2 = ping-pong), got {ways!r}")
        if name is None:
            caller = sys._getframe(1)
            name = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
        elif type(name) is not str or not name:
            raise ValueError(f"GlobalHierarchy name must be a non-empty string, got {name!r}")
        if level is not None:
            names = [lv.name for lv in session.hardware.levels]
            if level not in names:
                # (a LevelError: a schedule written for other hardware fails like any schedule, as a status)
                raise LevelError(f"GlobalHierarchy {name!r}: level {level!r} is not a memory level of hardware "
                                 f"{session.hardware.name!r}; its levels: {names}")
            if level == SRAM_LEVEL:
                level = None
        self.session = session
        self.name = name
        self.ways = ways
        self.level = level
        self._instance: ScopeInstance | None = None

    def _enter_py(self) -> "Scope":
        """Open an instance of this scope (the reference; see `session._bind_core`)."""
        self._instance = self.session.open_scope(self.name, self.ways, self.level)
        return self

    def _exit_py(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close it: store its modified buffers and free them all."""
        self.session.close_scope(self._instance, exc)

    __init__ = _init_py
    __enter__ = _enter_py
    __exit__ = _exit_py

    def scratch(self, name: str, shape: tuple[int, ...], reuse: bool = False) -> Tile:
        """An on-chip-only zeroed buffer (no DDR backing, never loaded or stored); see Session.scratch."""
        return self.session.scratch(name, shape, reuse)


GlobalHierarchy = Scope  # the blog's name of a scope (its demos and ours use it): the same class
