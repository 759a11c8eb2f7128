"""What the memory levels below the SRAM (`dsasim.traced.levels`) need of the session they serve: `LevelHost`, a
typing protocol of a few public properties and methods that `dsasim.traced.session.Session` implements.

`LevelState` reads and calls nothing else of the session (tests/test_levels.py drives it with a fake host that has
only these, and tests/test_traced_privates.py refuses any `_private` attribute read across traced/ modules). Levels
names this protocol instead of Session because the session imports levels: an import back, even a type-only one,
would close a cycle."""

from __future__ import annotations

from typing import Any, Protocol

from dsasim.traced._core import ArrayFields, Buffer, ScopeInstance, TileFields

__all__ = ["LevelHost", "LEVEL_HOST_MEMBERS"]

# every member of the protocol, for the tests that check LevelState uses no other
LEVEL_HOST_MEMBERS = ("numeric", "dtype", "word_bytes", "scope_stack", "event_log", "take_buffer_id",
                      "current_scope", "access_in", "mark_region_written")


class LevelHost(Protocol):
    """The session's state and steps that `LevelState` reads and calls."""

    numeric: bool  # whether buffers carry data (False: counting only)
    dtype: Any  # the numpy dtype of numeric buffers

    @property
    def word_bytes(self) -> int:
        """Bytes per element."""

    @property
    def scope_stack(self) -> list[ScopeInstance]:
        """The open scope instances, outermost first (read only)."""

    @property
    def event_log(self) -> Any:
        """Where trace events go (`dsasim.traced.trace`'s log, or one that records nothing)."""

    def take_buffer_id(self) -> int:
        """The id of a new buffer (ids are shared by all levels)."""

    def current_scope(self, arr: ArrayFields, region: tuple) -> ScopeInstance:
        """The innermost open SRAM scope an access of `region` of `arr` goes to (its error: outside any scope)."""

    def access_in(self, arr: ArrayFields, region: tuple, elements: int, reuse: bool,
                  inst: ScopeInstance | None) -> TileFields:
        """An SRAM access of a normalised region in `inst` (`elements` of it, `reuse` as the access asked)."""

    def mark_region_written(self, buf: Buffer, region: tuple) -> None:
        """Record that `region` of `buf`'s tensor was written (a write-back into it)."""
