"""What a search minimises: an `Objective` names the figure ranked first and the tie-breaks after it.

Every search ranks its candidates by one objective's `key` (a tuple of figures, compared lexicographically;
`order` sorts numpy arrays of candidates by it), so one rule ranks a layer's nests, a fused segment's nests, a
chain's partitions, a hierarchy's inner tilings and a GEMM chain's fronts alike. The figures:

* traffic: DDR bytes loaded + stored (in a hierarchy's inner search, DDR then the inner levels' bytes);
* cycles: estimated cycles (simulated ones where the timing simulator confirmed a candidate);
* peak: peak SRAM bytes (the last tie-break: the smaller footprint; a ranking with no peak at hand leaves it out);
* energy: energy per inference, pJ (`dsasim.energy.report`: every level's reads and writes, the MACs, the vector
  unit, leakage over the estimated cycles);
* edp: energy x estimated cycles (pJ x cycles), the energy-delay product.

`OBJECTIVES` is the registry: the CLI's `--objective` choices and their help come from it, and `objective_named`
is the one parser (library functions accept an Objective or its name). A new objective is one more entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["Objective", "OBJECTIVES", "TRAFFIC", "CYCLES", "ENERGY", "EDP", "DEFAULT_OBJECTIVE", "FIGURES",
           "ENERGY_FIGURES", "UnknownObjectiveError",
           "objective_named", "lexicographic_less", "describe_objectives"]

FIGURES = ("traffic", "cycles", "peak", "energy", "edp")  # what a key may rank by (module docstring)
ENERGY_FIGURES = ("energy", "edp")  # figures a search computes only when an objective ranks by them


class UnknownObjectiveError(ValueError):
    """An objective that is not in OBJECTIVES; the message lists the choices."""


@dataclass(frozen=True)
class Objective:
    """One way to rank candidates: `ranking` lists distinct FIGURES, primary first.

    needs_cycles: ranking first by this objective needs the cycle estimate, and 2-way buffering can improve it
    (buffering overlaps transfers with computes, so it lowers cycles, never traffic): the one-level search then
    estimates cycles in its first pass and tries 2 ways on its candidates; otherwise it enumerates 1 way and gives
    the winner the buffering of the best estimated cycles afterwards."""

    name: str
    description: str  # one line, for `--help`
    ranking: tuple[str, ...]
    needs_cycles: bool

    def __post_init__(self) -> None:
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"Objective: name must be a non-empty identifier, got {self.name!r}")
        if not self.description or "\n" in self.description:
            raise ValueError(f"Objective {self.name}: description must be one non-empty line")
        if not self.ranking or len(set(self.ranking)) != len(self.ranking) or not set(self.ranking) <= set(FIGURES):
            raise ValueError(f"Objective {self.name}: ranking must list distinct figures of {FIGURES}, primary "
                             f"first, got {self.ranking}")

    @property
    def needs_energy(self) -> bool:
        """Whether the ranking uses energy (energy or edp): the search then computes it for every candidate."""
        return any(f in ENERGY_FIGURES for f in self.ranking)

    @property
    def primary(self) -> str:
        """The figure ranked first."""
        return self.ranking[0]

    def key(self, traffic: Any, cycles: Any, peak: Any = None, energy: Any = None) -> tuple:
        """The ranking key (smaller is better) of one candidate or of arrays of candidates: the figures in
        `ranking` order; peak None leaves the peak out; a tuple figure (e.g. DDR then inner traffic) counts as its
        components in order; edp is energy x cycles. An energy objective without `energy` is a ValueError."""
        if energy is None and self.needs_energy:
            raise ValueError(f"objective {self.name} ranks by energy, which this search did not compute")
        figures = {"traffic": traffic, "cycles": cycles, "peak": peak, "energy": energy,
                   "edp": None if energy is None else energy * cycles}
        out: list[Any] = []
        for name in self.ranking:
            value = figures[name]
            if value is None and name == "peak":
                continue
            out.extend(value if isinstance(value, tuple) else (value,))
        return tuple(out)

    def order(self, traffic: np.ndarray, cycles: np.ndarray, peak: np.ndarray | None = None,
              energy: np.ndarray | None = None) -> np.ndarray:
        """Indices that sort 1-d candidate arrays best first by `key` (stable: equal keys keep their order)."""
        return np.lexsort(tuple(reversed(self.key(traffic, cycles, peak, energy))))  # lexsort's last is the primary

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        """Equal to an Objective of the same fields, and to its name: user code that compared a result's
        objective with 'traffic' or 'cycles' (a string before issue 27) keeps working."""
        if isinstance(other, str):
            return other == self.name
        if isinstance(other, Objective):
            return (self.name, self.description, self.ranking, self.needs_cycles) == \
                (other.name, other.description, other.ranking, other.needs_cycles)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)  # equal objects (and an objective and its name) hash alike

    def __reduce__(self) -> tuple:
        """Pickled by name, so that a worker process gets the registry's instance."""
        return objective_named, (self.name,)


TRAFFIC = Objective("traffic", "least DDR traffic, loaded + stored bytes; ties: estimated cycles, then peak SRAM",
                    ("traffic", "cycles", "peak"), needs_cycles=False)
CYCLES = Objective("cycles", "least estimated cycles, simulated where confirmed; ties: traffic, then peak SRAM",
                   ("cycles", "traffic", "peak"), needs_cycles=True)

ENERGY = Objective("energy", "least energy per inference in pJ (DDR, SRAM, inner levels, MACs, vector, leakage); "
                            "ties: estimated cycles, traffic, peak SRAM", ("energy", "cycles", "traffic", "peak"),
                   needs_cycles=True)  # leakage grows with time, and 2 ways shorten it
EDP = Objective("edp", "least energy x delay (pJ x estimated cycles); ties: energy, traffic, peak SRAM",
                ("edp", "energy", "traffic", "peak"), needs_cycles=True)

OBJECTIVES: dict[str, Objective] = {o.name: o for o in (TRAFFIC, CYCLES, ENERGY, EDP)}
DEFAULT_OBJECTIVE = TRAFFIC


def objective_named(objective: Objective | str) -> Objective:
    """The registered Objective given one or its name; UnknownObjectiveError (a ValueError) listing the choices
    for anything else."""
    if isinstance(objective, Objective) and OBJECTIVES.get(objective.name) == objective:
        return OBJECTIVES[objective.name]
    if isinstance(objective, str) and objective in OBJECTIVES:
        return OBJECTIVES[objective]
    raise UnknownObjectiveError(f"unknown objective {objective!r}: choose one of "
                                f"{', '.join(repr(name) for name in OBJECTIVES)}")


def describe_objectives() -> str:
    """Every objective with its description, for `--help`: 'traffic (...), cycles (...)'."""
    return ", ".join(f"{o.name} ({o.description})" for o in OBJECTIVES.values())


def lexicographic_less(a: Sequence[Any], b: Sequence[Any]) -> Any:
    """Whether key `a` ranks strictly before key `b` (tuples of the same length): elementwise over numpy arrays,
    a bool for scalars."""
    less: Any = False
    equal: Any = True
    for x, y in zip(a, b, strict=True):
        less = less | (equal & (x < y))
        equal = equal & (x == y)
    return less
