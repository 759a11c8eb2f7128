"""The errors a schedule can run into; each names what happened and how to fix it."""

from __future__ import annotations


class ScheduleError(Exception):
    """Base class: a schedule did something the memory model forbids or that would lose data."""


class SramOverflowError(ScheduleError):
    """The live SRAM footprint would exceed the accelerator's capacity."""

    def __init__(self, message: str, capacity_bytes: int, requested_bytes: int,
                 live: list[tuple[str, str, int, str]]) -> None:
        super().__init__(message)
        self.capacity_bytes = capacity_bytes
        self.requested_bytes = requested_bytes
        # (tensor, region, charged bytes, scope) of every buffer live when the allocation failed
        self.live = live


class RegionError(ScheduleError, IndexError):
    """An index into a TracedArray is malformed or out of bounds."""


class ReuseError(ScheduleError):
    """The reuse flag asked for something the held buffer cannot do (e.g. a larger region)."""


class StaleTileError(ScheduleError):
    """A tile was used after its buffer was freed or overwritten by a reuse load."""


class ReadOnlyError(ScheduleError):
    """A compute tried to write into a tile of an input tensor."""


class CoherenceError(ScheduleError):
    """A DDR load would read data that a live, modified SRAM buffer has not written back yet."""


class UnfinishedError(ScheduleError):
    """The run ended with scopes still open or output elements never stored."""


class SessionStateError(ScheduleError):
    """The Session can no longer be trusted: an exception left a scope before its buffers were stored."""


class SessionFinishedError(SessionStateError):
    """The Session has finished: `finish()` returned its Trace, so it traces, counts and makes tensors no more."""


class CrossSessionError(ScheduleError, ValueError):
    """A tile or unit of one Session was combined with a tile or unit of another Session."""


class LevelError(ScheduleError, ValueError):
    """A memory level misused or missing: a scope at a level the hardware does not have (a schedule written for
    other hardware), a TensorCore operand not in the level its role is read from, a weight declared as an input,
    a scope site entered at two levels, more ways than its level allows."""
