"""Dynamic shapes: one layer over a range of one dimension, the best schedule per shape against a small family of
shape-generic schedules and the dispatch table that picks among them (after DietCode).

`sweep_shapes(problem, dim, values, hardware)` searches every shape on its own (`search`, objective cycles: the
per-shape optimum a compiler with unlimited tuning time would ship) and reports per shape its estimated cycles,
traffic, TensorCore utilization and padding waste (partial 16 x 24 blocks). It then builds **shape-generic
schedules** the DietCode way: each per-shape best nest becomes a template whose loop order, staging and ways stay
and whose tiles are fixed once for the whole range, the TensorCore's input- and output-channel tiles rounded up to
whole blocks (multiples of 16 and 24: the micro-kernel shapes); on a smaller shape a tile is clamped to the extent.
Every template is evaluated on every shape with the analytic model (a template that does not fit the SRAM, or is
invalid for a shape, costs infinity there), and:

- the **single generic schedule** is the template with the least worst-case loss over the range (one schedule for
  every shape: no dispatch at all);
- the **dispatch table** covers the range with as few contiguous shape ranges as possible, each served by one
  template within `max_loss` of the per-shape optimum (greedy interval cover, which is optimal for contiguous
  ranges); its `schedules` are the distinct templates it uses.

Loss = template cycles / per-shape best cycles - 1 (estimated cycles of the analytic model for both). A sweep of
another kind may rank by another objective's figure (`ShapeSweep.objective`: attention's `--objective traffic`);
its points then carry that figure (`ShapePoint.objective_value`) and the loss is the ratio of that figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem, Problem
from dsasim.energy.report import EnergyReport, energy_json, energy_report
from dsasim.hardware import Accelerator
from dsasim.one_level import require_one_level
from dsasim.util import parse_whole

__all__ = ["FIGURE_AXES", "FIGURE_FIELDS", "MAX_SHAPES", "estimate_shapes_work", "shape_problems", "DispatchEntry", "ShapePoint", "ShapeSweep",
           "parse_vary", "shape_sweep_of", "sweep_shapes", "vary_problem"]

_CONV_KEYS = ("n", "ic", "oc", "h", "w")
_GEMM_KEYS = ("m", "n", "k")


MAX_SHAPES = 4096  # values one --vary may give: every shape is a whole search

# an objective's primary figure -> its name in the JSON (a template's figure on a shape: dispatched_<field>)
FIGURE_FIELDS = {"cycles": "cycles", "traffic": "traffic_bytes", "energy": "energy_pj", "edp": "edp_pj_cycles"}
# the same figure on a plot's axis (`dsasim shapes --plot`)
FIGURE_AXES = {"cycles": "cycles (estimate)", "traffic": "DDR traffic (bytes)", "energy": "energy (pJ)",
               "edp": "energy x delay (pJ x cycles)"}


def parse_vary(text: str) -> tuple[str, list[int]]:
    """'m=1:128' or 'm=1:128:8' (inclusive, step) or 'm=1,2,4' -> ('m', values) ('m+n=...' varies both);
    ValueError otherwise. A range is counted before it is built (at most MAX_SHAPES values); numbers are ASCII
    digits only."""
    dim, sep, body = text.partition("=")
    dim = dim.strip()
    form = f"--vary {text!r}: give DIM=LO:HI[:STEP] or DIM=A,B,C in digits 0-9, e.g. m=1:128"
    if not sep or not dim or not body.strip():
        raise ValueError(form)
    body = body.strip()
    parts = body.split(",") if "," in body or ":" not in body else None
    try:
        if parts is not None:
            values = [parse_whole(v, "--vary value") for v in parts]
            if len(values) > MAX_SHAPES:
                raise ValueError(f"--vary {text!r}: {len(values):,} shapes; at most {MAX_SHAPES}")
        else:
            bounds = body.split(":")
            if len(bounds) not in (2, 3):
                raise ValueError(form)
            lo, hi, step = (parse_whole(b, "--vary bound") for b in (*bounds, "1")[:3])
            if step < 1 or hi < lo:
                raise ValueError(f"--vary {text!r}: need LO <= HI and STEP >= 1")
            count = len(range(lo, hi + 1, step))  # O(1): the range is counted before it is built
            if count > MAX_SHAPES:
                raise ValueError(f"--vary {text!r}: {count:,} shapes; at most {MAX_SHAPES} (use a larger STEP)")
            values = list(range(lo, hi + 1, step))
    except ValueError as err:
        raise ValueError(str(err) if str(err).startswith("--vary ") else f"{form} ({err})") from None
    if any(v < 1 for v in values):
        raise ValueError(f"--vary {text!r}: every value must be >= 1")
    if len(set(values)) != len(values):
        raise ValueError(f"--vary {text!r}: a value is given twice")
    return dim, sorted(values)


def vary_problem(problem: Problem, dim: str, value: int) -> Problem:
    """`problem` with dimension `dim` set to `value` (conv: n, ic, oc, h, w or hw for both; matmul: m, n, k;
    several joined by '+' move together, e.g. m+n for attention's scores over the sequence length)."""
    from dsasim.architect.problems.layers import parse_layer

    if isinstance(problem, ConvProblem):
        keys = _CONV_KEYS + ("hw",)
    elif isinstance(problem, MatmulProblem):
        keys = _GEMM_KEYS
    else:  # pragma: no cover - the two problem kinds
        raise ValueError(f"cannot vary a {type(problem).__name__}")
    dims = dim.split("+")
    unknown = [d for d in dims if d not in keys]
    if unknown or len(set(dims)) != len(dims):
        raise ValueError(f"--vary {dim}: {problem.kind} layers vary {', '.join(keys)} (several joined by +, "
                         f"each once)")
    kind, body = problem.spec().split(":", 1)
    values = dict(part.split("=") for part in body.split(","))
    if isinstance(problem, ConvProblem) and "w" not in values:
        values["w"] = values["h"]
    for d in dims:
        for key in (("h", "w") if d == "hw" else (d,)):
            values[key] = str(value)
    return parse_layer(f"{kind}:" + ",".join(f"{k}={v}" for k, v in values.items()))


@dataclass(frozen=True)
class ShapePoint:
    """One shape: the per-shape best schedule's figures (None fields: nothing fits)."""

    value: int
    problem: Problem
    nest: dict[str, Any] | None  # the best LoopNest, as JSON
    cycles: int | None
    traffic_bytes: int | None
    tensorcore_utilization: float | None
    reason: str = ""
    # the best schedule's energy (its model's counts priced on the hardware, over its estimated cycles), None: no fit
    energy: EnergyReport | None = None
    # the best's figure of the sweep's objective (traffic bytes, pJ, ...); None: its cycles (the layers' objective)
    objective_value: float | None = None

    @property
    def reference(self) -> float | None:
        """What a template's figure on this shape is compared with: the best's objective figure (None: no fit)."""
        return self.objective_value if self.objective_value is not None else self.cycles


@dataclass(frozen=True)
class DispatchEntry:
    """One row of the dispatch table: shapes lo..hi (inclusive values of the varied dim) use template `schedule`."""

    lo: int
    hi: int
    schedule: int  # index into ShapeSweep.templates
    max_loss: float


@dataclass(frozen=True)
class ShapeSweep:
    """The outcome of `sweep_shapes` (see the module docstring)."""

    problem: Problem
    dim: str
    hardware: Accelerator
    sram_bytes: int
    points: tuple[ShapePoint, ...]
    templates: tuple[dict[str, Any], ...]  # order, tiles, stage, ways, slide; generic: False for a shape's exact
    # optimum added because no shape-generic template served that shape within the bound
    cost: tuple[tuple[float, ...], ...]  # [template][shape] the objective's figure (inf: does not fit / invalid)
    single: int | None  # the template with the least worst-case loss
    dispatch: tuple[DispatchEntry, ...]
    max_loss: float
    objective: str = "cycles"  # the figure `cost` and the losses are in (a key of FIGURE_FIELDS)

    def __post_init__(self) -> None:
        if self.objective not in FIGURE_FIELDS:
            raise ValueError(f"ShapeSweep: objective must be one of {', '.join(FIGURE_FIELDS)}, got "
                             f"{self.objective!r}")

    def loss(self, template: int, shape: int) -> float:
        """Loss of a template on the shape at index `shape`, in the objective's figure (inf where it does not
        fit)."""
        best = self.points[shape].reference
        return self.cost[template][shape] / best - 1 if best else math.inf

    def dispatched(self, shape: int) -> int:
        """The template the dispatch table gives the shape at index `shape`."""
        v = self.points[shape].value
        return next(e.schedule for e in self.dispatch if e.lo <= v <= e.hi)

    @property
    def distinct_schedules(self) -> list[int]:
        return sorted({e.schedule for e in self.dispatch})

    def to_json(self) -> dict[str, Any]:
        """Per shape its best and its dispatched figures; the templates, the single schedule, the table."""
        def num(x: float) -> float | None:
            return None if math.isinf(x) else round(x, 6)

        shapes = []
        for i, p in enumerate(self.points):
            row: dict[str, Any] = {self.dim: p.value, "shape": p.problem.spec(), "cycles": p.cycles,
                                   "traffic_bytes": p.traffic_bytes,
                                   "tensorcore_utilization": None if p.tensorcore_utilization is None else
                                   round(p.tensorcore_utilization, 6),
                                   "padding_waste": None if p.tensorcore_utilization is None else
                                   round(1 - p.tensorcore_utilization, 6), "best": p.nest,
                                   **energy_json(p.energy)}
            field = FIGURE_FIELDS[self.objective]
            if self.objective != "cycles" and p.objective_value is not None:
                row[f"best_{field}"] = num(p.objective_value)
            if p.cycles is not None and self.dispatch:
                t = self.dispatched(i)
                row.update({"dispatched_schedule": t, f"dispatched_{field}": num(self.cost[t][i]),
                            "dispatched_loss": num(self.loss(t, i))})
            if self.single is not None and p.cycles is not None:
                row.update({f"single_{field}": num(self.cost[self.single][i]),
                            "single_loss": num(self.loss(self.single, i))})
            if p.reason:
                row["reason"] = p.reason
            shapes.append(row)
        return {"layer": self.problem.spec(), "dim": self.dim, "hardware": self.hardware.name,
                "sram_bytes": self.sram_bytes, "objective": self.objective, "max_loss": self.max_loss,
                "shapes": shapes,
                "templates": list(self.templates), "single_schedule": self.single,
                "dispatch": [{"lo": e.lo, "hi": e.hi, "schedule": e.schedule, "max_loss": round(e.max_loss, 6)}
                             for e in self.dispatch]}


def _best_of(problem: Problem, hardware: Accelerator) -> ShapePoint | str:
    """The per-shape optimum (search by estimated cycles) as a partial ShapePoint, or why nothing fits (the task
    an executor runs)."""
    from dsasim.architect.search.objective import CYCLES
    from dsasim.architect.search.layer_search import search
    from dsasim.util import numpy_hugepages_off

    numpy_hugepages_off()
    try:
        result = search(problem, hardware, objective=CYCLES, force=True)
    except ValueError as err:
        return str(err)
    best = result.best
    if best is None:
        return f"no tiling of {problem.spec()} fits in {hardware.sram_bytes:,} B of SRAM"
    from dsasim.architect.model.analytic import analyze

    counts = analyze(best.nest, result.hardware).access_counts()
    return ShapePoint(value=0, problem=problem, nest=best.nest.to_json(), cycles=best.estimated_cycles,
                      traffic_bytes=best.traffic_bytes, tensorcore_utilization=best.tensorcore_utilization(hardware),
                      energy=energy_report(counts, result.hardware, best.estimated_cycles))


def _template(nest: dict[str, Any], problem: Problem, hardware: Accelerator) -> dict[str, Any]:
    """A per-shape best nest made shape-generic: TensorCore channel tiles rounded up to whole blocks."""
    tiles = dict(nest["tiles"])
    for dim, block in ((problem.tc_in_dim, hardware.tensorcore_in_channels),
                       (problem.tc_out_dim, hardware.tensorcore_out_channels)):
        tiles[dim] = -(-tiles[dim] // block) * block
    return {"order": list(nest["order"]), "tiles": tiles, "stage": dict(nest["stage"]), "ways": dict(nest["ways"]),
            "slide": list(nest.get("slide", ())), "generic": True}


def _instantiate(template: dict[str, Any], problem: Problem) -> LoopNest | None:
    """The template on one shape (tiles clamped to its extents); None where it is not a valid nest there."""
    tiles = {d: min(t, problem.extents[d]) for d, t in template["tiles"].items()}
    try:
        return LoopNest(problem, template["order"], tiles, template["stage"], template["ways"],
                        slide=template["slide"])
    except ValueError:
        return None


def _cost(template: dict[str, Any], problem: Problem, hardware: Accelerator) -> float:
    from dsasim.architect.model.analytic import analyze

    nest = _instantiate(template, problem)
    if nest is None:
        return math.inf
    a = analyze(nest, hardware)
    return float(a.estimated_cycles) if a.peak_sram_bytes <= hardware.sram_bytes else math.inf


def _cover(points: Sequence[ShapePoint], cost: Sequence[Sequence[float]], max_loss: float) -> list[DispatchEntry]:
    """Fewest contiguous ranges of the (fitting) shapes, each served by one template within max_loss."""
    ok = [i for i, p in enumerate(points) if p.cycles is not None]
    within = [[points[i].cycles is not None and cost[t][i] <= (1 + max_loss) * points[i].reference * (1 + 1e-12)
               for i in range(len(points))] for t in range(len(cost))]
    entries: list[DispatchEntry] = []
    k = 0
    while k < len(ok):
        best_t, best_reach = None, k - 1
        for t in range(len(cost)):
            reach = k
            while reach < len(ok) and within[t][ok[reach]]:
                reach += 1
            if reach - 1 > best_reach:
                best_t, best_reach = t, reach - 1
        if best_t is None:  # no template within the bound here (sweep_shapes adds the exact optimum, so only if
            # the model's estimate of that nest differed from the search's): the cheapest serves this shape alone
            best_t, best_reach = min(range(len(cost)), key=lambda t: (cost[t][ok[k]], t)), k
        span = ok[k:best_reach + 1]
        worst = max(cost[best_t][i] / points[i].reference - 1 for i in span)
        entries.append(DispatchEntry(lo=points[span[0]].value, hi=points[span[-1]].value, schedule=best_t,
                                     max_loss=worst))
        k = best_reach + 1
    return entries


SHAPE_SAMPLES = 5  # shapes whose search space is counted for an estimate (each count builds the search's tables)


def shape_problems(problem: Problem, dim: str, values: Sequence[int]) -> list[Problem]:
    """`problem` at every value of `dim`; ValueError naming the first value that is not a valid layer (every value
    is checked, not only the first: a 32-group conv takes ic=32 but not ic=33)."""
    out = []
    for v in values:
        try:
            out.append(vary_problem(problem, dim, v))
        except ValueError as err:
            raise ValueError(f"--vary {dim}={v}: {err}") from None
    return out


def estimate_shapes_work(problems: Sequence[Problem], hardware: Accelerator, jobs: int = 1) -> Any:
    """The per-shape searches' work (a `search.WorkEstimate`): first-pass candidates counted exactly at up to
    SHAPE_SAMPLES shapes spread over the sweep (its ends included) and interpolated linearly between them by
    position, each shape's search at the search's rates, spread over `jobs` workers."""
    from dsasim.architect.search.layer_search import EVALUATIONS_PER_SECOND, SECONDS_PER_CAPACITY, WorkEstimate, \
        estimate_search_work

    if not problems:
        raise ValueError("estimate_shapes_work needs at least one shape")
    n = len(problems)
    at = sorted({round(i * (n - 1) / (SHAPE_SAMPLES - 1)) for i in range(SHAPE_SAMPLES)})
    counted = {i: estimate_search_work(problems[i], hardware).evaluations for i in at}
    evaluations = 0
    for lo, hi in zip(at, at[1:] + [at[-1] + 1]):  # each sample to the next: linear between their counts
        a, b = counted[lo], counted.get(hi, counted[lo])
        span = max(hi - lo, 1)
        evaluations += sum(round(a + (b - a) * (i - lo) / span) for i in range(lo, min(hi, n)))
    seconds = (evaluations / EVALUATIONS_PER_SECOND + n * SECONDS_PER_CAPACITY) / min(max(jobs, 1), n)
    return WorkEstimate(what=f"searches of {n:,} shape(s) on {min(max(jobs, 1), n)} worker(s)",
                        evaluations=evaluations, traced_operations=0, seconds=seconds)


def sweep_shapes(problem: Problem, dim: str, values: Sequence[int], hardware: Accelerator,
                 max_loss: float = 0.05, executor: Any = None, progress: bool = False, force: bool = False,
                 warn: Callable[[str], None] | None = None, jobs: int = 1) -> ShapeSweep:
    """Per value of `dim` the best schedule, the single generic schedule and the dispatch table within `max_loss`
    (0.05: 5 %); see the module docstring. `executor`: where the per-shape searches run (default: here), on `jobs`
    workers. The whole work is estimated first (`estimate_shapes_work`): beyond the usual it raises
    WorkTooLargeError unless `force` (then `warn` gets the estimate)."""
    from dsasim.architect.studies.executor import InProcess
    from dsasim.architect.search.layer_search import _duration as duration, check_work

    require_one_level(hardware, "shape sweep")
    if not max_loss >= 0:
        raise ValueError(f"--max-loss must be >= 0 %, got {max_loss!r}")
    if not values:
        raise ValueError("sweep_shapes needs at least one value")
    problems = shape_problems(problem, dim, values)
    work = estimate_shapes_work(problems, hardware, jobs)
    check_work(work, force, warn, smaller="fewer shapes (a larger STEP in --vary), or a smaller layer")
    runner = executor if executor is not None else InProcess()
    found = runner.run(_best_of, [(p, hardware) for p in problems],
                       label=f"{problem.name}: shapes (estimated {duration(work.seconds)})", progress=progress)
    points = []
    for v, p, f in zip(values, problems, found):
        if isinstance(f, str):
            points.append(ShapePoint(value=v, problem=p, nest=None, cycles=None, traffic_bytes=None,
                                     tensorcore_utilization=None, reason=f))
        else:
            points.append(ShapePoint(value=v, problem=p, nest=f.nest, cycles=f.cycles, traffic_bytes=f.traffic_bytes,
                                     tensorcore_utilization=f.tensorcore_utilization, energy=f.energy))
    return shape_sweep_of(problem, dim, hardware, points, lambda p: _template(p.nest, p.problem, hardware),
                          _exact, lambda t, q: _cost(t, q, hardware), max_loss)


def _exact(p: ShapePoint) -> dict[str, Any]:
    """A shape's own optimum as a template (not shape-generic: its tiles exactly)."""
    return {"order": list(p.nest["order"]), "tiles": dict(p.nest["tiles"]), "stage": dict(p.nest["stage"]),
            "ways": dict(p.nest["ways"]), "slide": list(p.nest.get("slide", ())), "generic": False}


def shape_sweep_of(problem: Any, dim: str, hardware: Accelerator, points: Sequence[ShapePoint],
                   template_of: Callable[[ShapePoint], dict[str, Any]],
                   exact_of: Callable[[ShapePoint], dict[str, Any]],
                   cost_of: Callable[[dict[str, Any], Any], float], max_loss: float,
                   objective: str = "cycles") -> ShapeSweep:
    """The `ShapeSweep` of per-shape bests `points` (module docstring), for any kind of problem: `template_of(point)`
    makes a point's best shape-generic, `exact_of(point)` keeps it exact, `cost_of(template, problem)` is a
    template's figure of `objective` on a shape (estimated cycles by default; inf where it does not fit), compared
    with each point's `reference`."""
    templates: list[dict[str, Any]] = []
    for p in points:
        if p.nest is not None:
            t = template_of(p)
            if t not in templates:
                templates.append(t)
    cost = [tuple(cost_of(t, p.problem) for p in points) for t in templates]
    # a rounded-up template may cost its own shape a little: the per-shape optimum stays the reference, and a shape
    # no template serves within the bound gets its own optimum's exact nest as one more template
    for i, p in enumerate(points):
        if p.cycles is not None and not any(c[i] <= (1 + max_loss) * p.reference * (1 + 1e-12) for c in cost):
            exact = exact_of(p)
            templates.append(exact)
            cost.append(tuple(cost_of(exact, q.problem) for q in points))
    fitting = [i for i, p in enumerate(points) if p.cycles is not None]
    single = None
    if templates and fitting:
        single = min(range(len(templates)),
                     key=lambda t: (max(cost[t][i] / points[i].reference for i in fitting),
                                    sum(cost[t][i] for i in fitting), t))
    dispatch = _cover(points, cost, max_loss) if templates else []
    return ShapeSweep(problem=problem, dim=dim, hardware=hardware, sram_bytes=hardware.sram_bytes,
                      points=tuple(points), templates=tuple(templates), cost=tuple(cost), single=single,
                      dispatch=tuple(dispatch), max_loss=max_loss, objective=objective)
