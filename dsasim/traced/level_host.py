"""What the memory levels below the SRAM (`dsasim.traced.levels`) need of the session they serve: a typing
protocol. `dsasim.traced.memory.Session` satisfies it; levels names this protocol instead of Session because memory
imports levels, and an import back, even a type-only one, would close a cycle."""

from __future__ import annotations

from typing import Any, Protocol

from dsasim.traced._core import ArrayFields, Buffer, ScopeInstance, TileFields

__all__ = ["LevelHost"]


class LevelHost(Protocol):
    """The session's state and steps that `LevelState` reads and calls (all of them the session's own)."""

    numeric: bool  # whether buffers carry data (False: counting only)
    dtype: Any  # the numpy dtype of numeric buffers
    _word_bytes: int  # bytes per element
    _next_buffer: int  # the id the next buffer gets
    _stack: list[ScopeInstance]  # the open scopes' instances, outermost first
    _log: Any  # where trace events go (`dsasim.traced.trace`)

    def _current_scope(self, arr: ArrayFields, region: tuple) -> ScopeInstance:
        """The innermost open scope an access of `region` of `arr` goes to (its error: outside any scope)."""

    def _access_in(self, arr: ArrayFields, region: tuple, elements: int, reuse: bool,
                   inst: ScopeInstance | None) -> TileFields:
        """An SRAM access of a normalised region in `inst` (`elements` of it, `reuse` as the access asked)."""

    def _mark_region_written(self, buf: Buffer, region: tuple) -> None:
        """Record that `region` of `buf`'s tensor was written (a write-back into it)."""
