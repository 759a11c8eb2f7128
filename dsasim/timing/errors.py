"""Errors of the timing simulation: a malformed trace, and operations that can never all run (deadlock)."""

from __future__ import annotations


class TimingError(ValueError):
    """The trace cannot be timed (malformed, or inconsistent with the hardware)."""


class DeadlockError(TimingError):
    """The simulation cannot make progress: an operation waits for something that can never complete.

    `stuck` holds a description of each operation in the wait-for chain, the first one repeated at the end when
    the chain is a cycle.
    """

    def __init__(self, message: str, stuck: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.stuck = stuck


class TraceError(TimingError):
    """The trace is malformed: an event that a `Session` can never record (the message names the event)."""
