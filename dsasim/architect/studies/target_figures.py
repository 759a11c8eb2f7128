"""What the network evaluation keeps of a target's choice under one SRAM size (`TargetFigures`), and the one
executor task that sweeps a target over sizes for it (`sweep_target_task`).

A target that can be evaluated in a network (the `NetworkTarget` protocol: the layer and chain kinds) answers
`network_choices(sizes, objective)`: per SRAM size its model's best `Choice` (nothing re-run through the trace),
found in one pass over all sizes where the kind can (a layer: one search front; a chain: `sweep_chain` with the
layers' fronts). Its choices add two things to the `Choice` figures: `tensorcore_cycles` and `network_schedule()`
(the schedule's JSON and a one-phrase label, e.g. a chain's partition "[1 2] [3]"), and may add `access_counts`
(its schedule's reads and writes, what the network's energy prices; without it the network's energy leaves the
entry out and names it). The task runs in worker
processes and on Dask: it is module-level, and it returns small figures records, not the choices (which hold the
search's arrays), so that little travels back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, Objective
from dsasim.architect.studies.target import Choice, Target
from dsasim.energy.accesses import AccessCounts

__all__ = ["NetworkChoice", "NetworkTarget", "TargetFigures", "sweep_target_task"]


@runtime_checkable
class NetworkChoice(Choice, Protocol):
    """A `Choice` the network evaluation can sum: with its TensorCore cycles and its schedule as JSON."""

    @property
    def tensorcore_cycles(self) -> int | None:
        """Cycles the TensorCore computes (padding included), None when nothing fits."""
        ...

    def network_schedule(self) -> tuple[str, dict[str, Any]]:
        """(label, schedule JSON) of the chosen schedule: label '' for a single nest, a chain's partition."""
        ...



@runtime_checkable
class NetworkTarget(Target, Protocol):
    """A target the network evaluation searches (`dsasim network`, `sweep-sram --network`)."""

    def network_choices(self, sizes: Sequence[int], objective: Objective | str) -> list[NetworkChoice]:
        """Per SRAM size (bytes, in order), the model's best choice by `objective` (nothing re-run);
        ValueError for what cannot be searched."""
        ...


@dataclass(frozen=True)
class TargetFigures:
    """A choice's figures under one SRAM size, per repeat (bytes, MACs, cycles: the model's estimate)."""

    loaded_bytes: int
    stored_bytes: int
    cycles: int
    tensorcore_cycles: int
    macs: int
    peak_sram_bytes: int
    lower_bound_bytes: int
    compulsory_bytes: int
    label: str  # what was chosen in one phrase: '' for a nest, a chain's partition such as "[1] [2 3]"
    schedule: dict[str, Any]  # the schedule's JSON
    # the schedule's reads and writes (its model's, priced by the network evaluation); None: its model gives none
    access_counts: AccessCounts | None = None
    # per level below the SRAM: (level, bytes staged in from its parent, bytes written back), per repeat; () for a
    # kind that models the SRAM only (`level_target.LevelChoice.level_bytes`)
    level_bytes: tuple[tuple[str, int, int], ...] = ()

    def __post_init__(self) -> None:
        for name in ("loaded_bytes", "stored_bytes", "cycles", "tensorcore_cycles", "macs", "peak_sram_bytes",
                     "lower_bound_bytes", "compulsory_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"TargetFigures: {name} must be a whole number >= 0, got {value!r}")
        for row in self.level_bytes:
            if (not isinstance(row, tuple) or len(row) != 3 or not isinstance(row[0], str)
                    or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in row[1:])):
                raise ValueError(f"TargetFigures: level_bytes rows must be (level name, bytes >= 0, bytes >= 0), "
                                 f"got {row!r}")

    @classmethod
    def of(cls, choice: NetworkChoice) -> TargetFigures:
        """The figures of a choice that fits (ValueError for one that does not: it has no figures)."""
        if not choice.fits:
            raise ValueError(f"TargetFigures.of a choice that does not fit: {choice.no_fit_reason}")
        label, schedule = choice.network_schedule()
        return cls(loaded_bytes=choice.loaded_bytes, stored_bytes=choice.stored_bytes, cycles=choice.cycles,
                   tensorcore_cycles=choice.tensorcore_cycles, macs=choice.macs,
                   peak_sram_bytes=choice.peak_sram_bytes, lower_bound_bytes=choice.lower_bound_bytes,
                   compulsory_bytes=choice.compulsory_bytes, label=label, schedule=schedule,
                   # a kind whose model counts no accesses: its energy is left out of the network's, and named
                   access_counts=getattr(choice, "access_counts", None),
                   # a kind searched on levels below the SRAM: the bytes each one moves
                   level_bytes=tuple(getattr(choice, "level_bytes", ())))


def sweep_target_task(target: NetworkTarget, sizes: tuple[int, ...],
                      objective: Objective | str = DEFAULT_OBJECTIVE) -> list[TargetFigures | str]:
    """Per SRAM size (bytes), the figures of the target's best choice by `objective`, or a string saying why
    nothing fits (the network evaluation's executor task; module-level so that worker processes and Dask import
    it by name)."""
    from dsasim.util import numpy_hugepages_off

    numpy_hugepages_off()  # a Dask worker is a fresh process: the search's arrays are fresh memory there
    try:
        choices = target.network_choices(sizes, objective)
    except ValueError as err:  # e.g. LayerTooLargeError: counts past exact integers
        return [f"{target.spec}: {err}"] * len(sizes)
    return [TargetFigures.of(c) if c.fits else c.no_fit_reason for c in choices]
