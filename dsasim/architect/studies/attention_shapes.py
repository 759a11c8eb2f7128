"""`dsasim shapes attention:... --vary n=LO:HI` (or m, or n+m for self-attention): DietCode's question for attention
over the sequence length — per length the best schedule (`search_attention` by an objective: estimated cycles by
default, or traffic, energy, edp), how much one length-generic schedule loses, and the dispatch table keeping every
length within `max_loss`. Every figure (the best, a template's cost, the loss) is the objective's primary figure.

The machinery is the layers' (`dsasim.architect.studies.shapes.shape_sweep_of`): only what a template is differs.
An attention template is a schedule kind with its tiles (query rows `br`, keys `bc`) rounded up to whole TensorCore
blocks (16 rows, 24 keys: the grid `attention_tiles` searches), clamped to the lengths of a shorter shape; its cost
on a shape is `analyze_attention`'s figure of the objective (inf where its peak does not fit the SRAM).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

from dsasim.architect.model.attention import AttentionAnalysis
from dsasim.architect.problems.attention import AttentionProblem
from dsasim.architect.search.objective import CYCLES, Objective, objective_named
from dsasim.architect.studies.shapes import ShapePoint, ShapeSweep, shape_sweep_of
from dsasim.energy.report import energy_report
from dsasim.hardware import Accelerator
from dsasim.one_level import require_one_level
from dsasim.util import ceil_div

__all__ = ["ATTENTION_VARY_DIMS", "DEFAULT_SHAPES_OBJECTIVE", "attention_figure", "attention_shape_problems",
           "sweep_attention_shapes", "template_loss"]

ATTENTION_VARY_DIMS = ("n", "m", "n+m")  # query length, key/value length, both (self-attention)
DEFAULT_SHAPES_OBJECTIVE = CYCLES  # DietCode's question is latency, as the layers' shapes ask it


def _energy_pj(a: AttentionAnalysis, hardware: Accelerator) -> float:
    from dsasim.architect.search.attention_search import energy_pj_of_analysis

    return energy_pj_of_analysis(a, hardware)


# an objective's primary figure of one analysis: DDR bytes, estimated cycles, pJ, pJ x cycles (a new objective's
# primary figure is one more entry)
_FIGURE_OF: dict[str, Callable[[AttentionAnalysis, Accelerator], float]] = {
    "traffic": lambda a, hardware: float(a.traffic_bytes),
    "cycles": lambda a, hardware: float(a.estimated_cycles),
    "energy": _energy_pj,
    "edp": lambda a, hardware: _energy_pj(a, hardware) * a.estimated_cycles,
}


def attention_figure(a: AttentionAnalysis, hardware: Accelerator, objective: Objective | str) -> float:
    """The objective's primary figure of one schedule's analysis on `hardware`: DDR bytes (traffic), estimated
    cycles (cycles), pJ (energy) or pJ x cycles (edp)."""
    return _FIGURE_OF[objective_named(objective).primary](a, hardware)


def attention_shape_problems(problem: AttentionProblem, dim: str, values: Sequence[int]) -> list[AttentionProblem]:
    """`problem` at every value of `dim` (n, m or n+m); ValueError naming the dimension or the first value that
    is not a valid attention (e.g. causal with m < n)."""
    if dim not in ATTENTION_VARY_DIMS:
        raise ValueError(f"--vary {dim}: attention varies {', '.join(ATTENTION_VARY_DIMS)} (query length, key "
                         f"length, both)")
    out = []
    for v in values:
        try:
            out.append(dataclasses.replace(problem, **{d: v for d in dim.split("+")}))
        except ValueError as err:
            raise ValueError(f"--vary {dim}={v}: {err}") from None
    return out


def _best(problem: AttentionProblem, value: int, hardware: Accelerator, objective: Objective) -> ShapePoint:
    """The length's best schedule by `objective`, as a ShapePoint (nest: kind and tiles)."""
    from dsasim.architect.search.attention_search import search_attention

    best = search_attention(problem, hardware, hardware.sram_bytes, objective).best
    if best is None:
        return ShapePoint(value=value, problem=problem, nest=None, cycles=None, traffic_bytes=None,
                          tensorcore_utilization=None,
                          reason=f"no schedule of {problem.spec()} fits in {hardware.sram_bytes:,} B of SRAM")
    s = best.schedule
    return ShapePoint(value=value, problem=problem, nest={"kind": s.kind, "tiles": {"br": s.br, "bc": s.bc}},
                      cycles=best.estimated_cycles, traffic_bytes=best.traffic_bytes,
                      tensorcore_utilization=best.macs / best.padded_macs,
                      energy=energy_report(best.access_counts, hardware, best.estimated_cycles),
                      objective_value=attention_figure(best, hardware, objective))


def _generic(point: ShapePoint, hardware: Accelerator) -> dict[str, Any]:
    """A length's best made length-generic: br and bc rounded up to whole TensorCore blocks."""
    t = point.nest["tiles"]
    return {"kind": point.nest["kind"],
            "tiles": {"br": ceil_div(t["br"], hardware.tensorcore_in_channels) * hardware.tensorcore_in_channels,
                      "bc": ceil_div(t["bc"], hardware.tensorcore_out_channels) * hardware.tensorcore_out_channels},
            "generic": True}


def _exact(point: ShapePoint) -> dict[str, Any]:
    return {"kind": point.nest["kind"], "tiles": dict(point.nest["tiles"]), "generic": False}


def _cost(template: dict[str, Any], problem: AttentionProblem, hardware: Accelerator,
          objective: Objective | str = CYCLES) -> float:
    """The template's figure of `objective` on `problem` (tiles clamped to its lengths; estimated cycles by
    default); inf where it does not fit."""
    from dsasim.architect.model.attention import analyze_attention
    from dsasim.architect.nests.attention_schedule import AttentionSchedule

    t = template["tiles"]
    a = analyze_attention(AttentionSchedule(problem, template["kind"], min(t["br"], problem.n),
                                            min(t["bc"], problem.m)), hardware)
    return attention_figure(a, hardware, objective) if a.peak_sram_bytes <= hardware.sram_bytes else math.inf


def template_loss(sweep: ShapeSweep, template: dict[str, Any]) -> float | None:
    """The worst loss over the fitting lengths of `template` (one of `sweep.templates`); None if it is not one."""
    if template not in sweep.templates:
        return None
    t = sweep.templates.index(template)
    return max(sweep.loss(t, i) for i, p in enumerate(sweep.points) if p.cycles is not None)


def sweep_attention_shapes(problem: AttentionProblem, dim: str, values: Sequence[int], hardware: Accelerator,
                           max_loss: float = 0.05,
                           objective: Objective | str = DEFAULT_SHAPES_OBJECTIVE) -> ShapeSweep:
    """Per value of `dim` (n, m or n+m) the best schedule by `objective` (estimated cycles by default; an unknown
    name is an UnknownObjectiveError), the single length-generic schedule and the dispatch table within `max_loss`
    (0.05: 5 %, in the objective's figure) on one-level `hardware` at its SRAM size."""
    if not isinstance(problem, AttentionProblem):
        raise TypeError(f"sweep_attention_shapes needs an AttentionProblem, got {type(problem).__name__}")
    require_one_level(hardware, "shape sweep")
    goal = objective_named(objective)
    if not max_loss >= 0:
        raise ValueError(f"--max-loss must be >= 0 %, got {max_loss!r}")
    if not values:
        raise ValueError("sweep_attention_shapes needs at least one value")
    problems = attention_shape_problems(problem, dim, values)
    if any(b <= a for a, b in zip(values, values[1:])):  # the dispatch table's ranges run in this order
        raise ValueError(f"sweep_attention_shapes: lengths must increase, each given once; got {list(values)}")
    points = [_best(p, v, hardware, goal) for p, v in zip(problems, values)]
    return shape_sweep_of(problem, dim, hardware, points, lambda p: _generic(p, hardware), _exact,
                          lambda t, q: _cost(t, q, hardware, goal), max_loss, goal.name)
