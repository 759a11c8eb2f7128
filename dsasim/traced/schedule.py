"""Workloads, schedules, and running a schedule into a report (traffic, SRAM, MACs, error vs torch).

A `Workload` names its DDR tensors and a torch reference; a `Schedule` is plain Python over the traced tensors
of one workload. `run_schedule` runs one on an `Accelerator` and returns a `RunResult`. torch is imported only by
a numeric run (its reference and error check), so count-only runs and `import dsasim` never load it.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

import numpy as np

from dsasim.energy.accesses import AccessCounts
from dsasim.energy.report import EnergyReport, energy_json
from dsasim.errors import ScheduleError, SramOverflowError
from dsasim.hardware import Accelerator
from dsasim.layout import check_layout
from dsasim.traced.counters import Counters
from dsasim.traced.session import Session
from dsasim.traced.traced_array import TracedArray
from dsasim.traced.trace import Trace
from dsasim.util import gc_paused, numpy_hugepages_for_tensor_data

if TYPE_CHECKING:
    import torch

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Workload:
    """Tensors (name -> shape) and a torch reference computing the outputs from the inputs (float64)."""

    name: str
    inputs: Mapping[str, Shape]
    outputs: Mapping[str, Shape]
    reference: Callable[..., Mapping[str, torch.Tensor]]
    intermediates: Mapping[str, Shape] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)  # input -> "input" (the default) or "weight"

    def __post_init__(self) -> None:
        names = [*self.inputs, *self.outputs, *self.intermediates]
        if len(set(names)) != len(names):
            raise ValueError(f"workload {self.name!r}: tensor names must be unique, got {names}")
        stray = sorted(set(self.roles) - set(self.inputs))
        if stray:
            raise ValueError(f"workload {self.name!r}: roles name {stray}, which are not inputs; inputs: "
                             f"{list(self.inputs)} (outputs and intermediates are always \"output\")")
        if not self.outputs:
            raise ValueError(f"workload {self.name!r}: declare at least one output")

    def make_inputs(self, seed: int) -> dict[str, np.ndarray]:
        """Deterministic standard-normal float32 inputs."""
        rng = np.random.default_rng(seed)
        with numpy_hugepages_for_tensor_data():
            return {name: rng.standard_normal(shape, dtype=np.float32) for name, shape in self.inputs.items()}


@dataclass(frozen=True)
class Schedule:
    """A schedule: `body(session, **tensors)` over the workload's traced tensors."""

    name: str
    workload: Workload
    body: Callable[..., None]
    description: str = ""
    hardware: str = "blog"  # the preset it was written for
    # For ports of the blog: the "total loaded" it printed (elements), and the schedule it ran just before this
    # one whose failure skipped `GlobalHierarchy.Reset()`, so that the printed number includes that schedule's
    # count up to its failure (reproduced by `run_schedule(..., blog_quirks=True)`).
    blog_printed: int | None = None
    blog_counter_follows: "Schedule | None" = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"schedule name {self.name!r} must be non-empty letters, digits, '-', '_', '.'")
        if self.blog_printed is not None and (not isinstance(self.blog_printed, int) or self.blog_printed < 0):
            raise ValueError(f"schedule {self.name!r}: blog_printed must be a count of elements >= 0 or None, "
                             f"got {self.blog_printed!r}")
        if self.blog_counter_follows is not None and not isinstance(self.blog_counter_follows, Schedule):
            raise ValueError(f"schedule {self.name!r}: blog_counter_follows must be a Schedule or None, got "
                             f"{type(self.blog_counter_follows).__name__}")


@dataclass(frozen=True, kw_only=True)
class TensorReport:
    """Traffic of one tensor, in bytes; refetch_factor = loaded_bytes / tensor_bytes."""

    name: str
    tensor_bytes: int
    loaded_bytes: int
    stored_bytes: int
    rmw_bytes: int
    loads: int
    stores: int
    hits: int
    blog_loaded_elements: int

    @property
    def refetch_factor(self) -> float:
        """How many times the tensor was loaded, on average (loaded / size)."""
        return self.loaded_bytes / self.tensor_bytes


class Status(StrEnum):
    """How a run ended. A str: `status == "ok"` holds and JSON writes the plain string."""

    OK = "ok"              # finished; in numeric mode the outputs match torch
    OVERFLOW = "overflow"  # SramOverflowError: the live footprint exceeded the SRAM
    ERROR = "error"        # another ScheduleError, or the numeric check failed


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What one run of a schedule gave. Numbers are None when the run failed (status != Status.OK)."""

    name: str
    hardware: str
    status: Status
    message: str = ""
    loaded_bytes: int | None = None
    stored_bytes: int | None = None
    rmw_bytes: int | None = None
    hits: int | None = None
    peak_sram_bytes: int | None = None
    blog_loaded_elements: int | None = None
    macs: int | None = None
    tensorcore_cycles: int | None = None
    max_abs_err: float | None = None
    tensors: tuple[TensorReport, ...] = ()
    # each memory level below the SRAM: `LevelTraffic.to_json()` plus its capacity_bytes (empty on one level)
    levels: tuple[Mapping[str, Any], ...] = ()
    # filled in by timing the trace (dsasim.timing.simulate); None when not timed or the run failed
    cycles: int | None = None
    roofline_cycles: int | None = None
    tensorcore_utilization: float | None = None
    # --blog-quirks only: the blog's count carried in from the schedule that failed before this one (elements)
    blog_carried_elements: int | None = None
    blog_printed: int | None = None
    trace: Trace | None = field(default=None, compare=False, repr=False)
    outputs: Mapping[str, np.ndarray] | None = field(default=None, compare=False, repr=False)
    # every read and write per tensor and memory level, and the compute units' work (the energy model's input)
    access_counts: AccessCounts | None = field(default=None, compare=False, repr=False)
    # the energy of the run, priced once it is timed (leakage needs its cycles); None untimed or failed
    energy: EnergyReport | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # a plain "ok" / "overflow" / "error" becomes the enum member; anything else is a ValueError
        object.__setattr__(self, "status", Status(self.status))

    def to_json(self) -> dict[str, Any]:
        """The JSON object for `dsasim demo --json` (stable key order)."""
        return {
            "name": self.name,
            "hardware": self.hardware,
            "status": self.status.value,
            "loaded_bytes": self.loaded_bytes,
            "stored_bytes": self.stored_bytes,
            "rmw_bytes": self.rmw_bytes,
            "hits": self.hits,
            "peak_sram_bytes": self.peak_sram_bytes,
            "blog_loaded_elements": self.blog_loaded_elements,
            "macs": self.macs,
            "tensorcore_cycles": self.tensorcore_cycles,
            "max_abs_err": (None if self.max_abs_err is None or not math.isfinite(self.max_abs_err)
                            else self.max_abs_err),
            "cycles": self.cycles,
            "roofline_cycles": self.roofline_cycles,
            "tensorcore_utilization": (None if self.tensorcore_utilization is None
                                       else round(self.tensorcore_utilization, 6)),
            "message": self.message,
            **({} if self.blog_carried_elements is None else
               {"blog_carried_elements": self.blog_carried_elements, "blog_printed": self.blog_printed}),
            "tensors": [{"name": t.name, "tensor_bytes": t.tensor_bytes, "loaded_bytes": t.loaded_bytes,
                         "stored_bytes": t.stored_bytes, "rmw_bytes": t.rmw_bytes, "hits": t.hits,
                         "refetch_factor": round(t.refetch_factor, 6)} for t in self.tensors],
            **({"levels": [dict(lv) for lv in self.levels]} if self.levels else {}),
            **energy_json(self.energy, self.access_counts if self.energy is not None else None),
        }


def bind_tensors(session: Session, workload: Workload,
                 inputs: Mapping[str, np.ndarray] | None) -> dict[str, TracedArray]:
    """Create the workload's traced tensors in `session` (inputs from `inputs` in numeric mode)."""
    tensors: dict[str, TracedArray] = {}
    for name, shape in workload.inputs.items():
        tensors[name] = session.input(name, inputs[name] if inputs is not None else shape,
                                      role=workload.roles.get(name, "input"))
    for name, shape in workload.intermediates.items():
        tensors[name] = session.intermediate(name, shape)
    for name, shape in workload.outputs.items():
        tensors[name] = session.output(name, shape)
    return tensors


def max_abs_error(outputs: Mapping[str, np.ndarray], reference: Mapping[str, torch.Tensor]) -> float:
    """Largest |ours - torch| over all outputs (torch computed in float64); NaN if any difference is NaN.

    A NaN or infinite value where the reference has another value is an error of NaN or inf, never 0: `max`
    over a tensor would skip NaN."""
    import torch

    worst = 0.0
    for name, ref in reference.items():
        ours = torch.from_numpy(np.asarray(outputs[name], dtype=np.float64))
        if tuple(ours.shape) != tuple(ref.shape):
            raise ValueError(f"output {name}: shape {tuple(ours.shape)} differs from the reference "
                             f"{tuple(ref.shape)}")
        ref64 = ref.to(torch.float64)
        same = (ours == ref64) | (torch.isnan(ours) & torch.isnan(ref64))  # equal infinities differ by 0
        diff = torch.where(same, torch.zeros_like(ours), (ours - ref64).abs())
        if bool(torch.isnan(diff).any()):
            return math.nan
        worst = max(worst, float(diff.max()))
    return worst


def _first_bad_output(outputs: Mapping[str, np.ndarray]) -> str | None:
    """Where the first NaN or infinity of the outputs is, for an error message; None when all are finite."""
    for name, values in outputs.items():
        bad = ~np.isfinite(values)
        if bad.any():
            index = np.unravel_index(int(np.argmax(bad)), values.shape)
            return (f"output {name} holds {int(np.count_nonzero(bad))} NaN/inf value(s), first at index "
                    f"{tuple(int(i) for i in index)}")
    return None


def _tensor_reports(counters: Counters, session: Session) -> tuple[TensorReport, ...]:
    reports = []
    for name, arr in session.tensors.items():
        if arr.scratch:
            continue
        t = counters.per_tensor[name]
        reports.append(TensorReport(name=name, tensor_bytes=arr.nbytes, loaded_bytes=t.loaded_bytes,
                                    stored_bytes=t.stored_bytes, rmw_bytes=t.rmw_bytes, loads=t.loads,
                                    stores=t.stores, hits=t.hits, blog_loaded_elements=t.blog_loaded_elements))
    return tuple(reports)


@contextmanager
def _torch_single_thread(numeric: bool) -> Iterator[None]:
    """In numeric mode, run torch on one thread for the block: tile-sized convs pay thread start-up 50x over
    the arithmetic (demo2: 194 s vs 4 s). Count-only runs compute nothing and never import torch."""
    if not numeric:
        yield
        return
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def check_layouts(workload: Workload, layouts: Mapping[str, str]) -> None:
    """ValueError for a layout of a tensor the workload does not have, or one that does not suit its tensor."""
    tensors = {**workload.inputs, **workload.outputs, **workload.intermediates}
    unknown = sorted(set(layouts) - set(tensors))
    if unknown:
        raise ValueError(f"layouts name tensor(s) {unknown} that workload {workload.name!r} does not have; its "
                         f"tensors are {list(tensors)}")
    for name, layout in layouts.items():
        check_layout(name, tensors[name], layout)


def run_schedule(schedule: Schedule, hardware: Accelerator, numeric: bool = True, seed: int = 0,
                 record_trace: bool = True, scope_ways: Mapping[str, int] | None = None,
                 enforce_capacity: bool = True, trace_event_limit: int | None = None,
                 blog_quirks: bool = False, scope_buffers: Mapping[str, int] | None = None,
                 layouts: Mapping[str, str] | None = None) -> RunResult:
    """Run a schedule; numeric mode checks it against torch. Failures become a status, not an exception.

    scope_ways (alias scope_buffers) maps scope names to buffering ways, as in `Session`. With record_trace, a
    trace longer than trace_event_limit events is dropped: the result's trace is None and its message says so.
    An output holding NaN or infinity fails the numeric check (status "error", naming the tensor and the first
    index), even where torch's reference holds the same value.
    blog_quirks=True reproduces the blog's printed "total loaded" in blog_loaded_elements (see `Session` and
    `Schedule.blog_counter_follows`); traffic and every other number are unchanged. layouts maps the workload's
    tensor names to DDR layouts (`dsasim.layout`; they change transfer cycles only)."""
    if layouts:
        check_layouts(schedule.workload, layouts)
    session = Session(hardware, numeric=numeric, record_trace=record_trace, scope_ways=scope_ways,
                      enforce_capacity=enforce_capacity, trace_event_limit=trace_event_limit,
                      blog_quirks=blog_quirks, scope_buffers=scope_buffers, layouts=layouts)
    scope_ways = session.scope_ways  # validated, whichever name it came by
    inputs = schedule.workload.make_inputs(seed) if numeric else None
    tensors = bind_tensors(session, schedule.workload, inputs)
    status, message = Status.OK, ""
    # a trace is millions of small tuples: cyclic GC passes over them would dominate the run
    with gc_paused(), _torch_single_thread(numeric):
        try:
            schedule.body(session, **tensors)
            trace = session.finish()
        except SramOverflowError as err:
            status, message = Status.OVERFLOW, str(err)
        except ScheduleError as err:
            status, message = Status.ERROR, f"{type(err).__name__}: {err}"
    c = session.counters
    blog_count: int | None = c.blog_loaded_elements if status == Status.OK else None
    blog_extra = {}
    if blog_quirks:
        carried = _blog_count_left_by(schedule.blog_counter_follows, hardware, scope_ways)
        blog_extra = dict(blog_carried_elements=carried, blog_printed=schedule.blog_printed)
        # the blog's counter counted a failed run's accesses up to the failing one, and kept counting after it
        blog_count = c.blog_loaded_elements + carried
    if status != Status.OK:
        if status == Status.OVERFLOW:
            message += _needed_sram_note(schedule, hardware, scope_ways)
        return RunResult(name=schedule.name, hardware=hardware.name, status=status, message=message,
                         blog_loaded_elements=blog_count, **blog_extra)
    err_value = None
    outputs = None
    if numeric:
        import torch

        outputs = {name: tensors[name].data for name in schedule.workload.outputs}
        with torch.no_grad():
            reference = schedule.workload.reference(
                **{k: torch.from_numpy(v).to(torch.float64) for k, v in inputs.items()})
        err_value = max_abs_error(outputs, reference)
        bad = _first_bad_output(outputs)
        # a non-finite output is an error even where torch's is non-finite too: agreeing on NaN checks nothing
        if bad is not None or not math.isfinite(err_value):
            status, message = Status.ERROR, f"numeric check failed: {bad or 'the outputs differ from torch by NaN'}"
    if session.trace_dropped:
        message = (f"trace not kept: longer than {trace_event_limit:,} events (raise the limit to time it; "
                   f"it costs about 26 B of memory per event)")
    return RunResult(name=schedule.name, hardware=hardware.name, status=status, message=message,
                     loaded_bytes=c.loaded_bytes, stored_bytes=c.stored_bytes, rmw_bytes=c.rmw_bytes, hits=c.hits,
                     peak_sram_bytes=c.peak_sram_bytes, blog_loaded_elements=blog_count, macs=c.macs,
                     tensorcore_cycles=c.tensorcore_cycles, max_abs_err=err_value,
                     tensors=_tensor_reports(c, session),
                     levels=tuple({**lv.to_json(), "capacity_bytes": hardware.level(name).capacity_bytes}
                                  for name, lv in c.levels.items()),
                     trace=trace if record_trace and not session.trace_dropped else None, outputs=outputs,
                     access_counts=c.access_counts(hardware.word_bytes), **blog_extra)


def _blog_count_left_by(previous: Schedule | None, hardware: Accelerator, scope_ways: Mapping[str, int]) -> int:
    """The blog's count (elements) that `previous` left in its global counter: its count up to its failure,
    or 0 when it finished (the blog then called `GlobalHierarchy.Reset()`)."""
    if previous is None:
        return 0
    result = run_schedule(previous, hardware, numeric=False, record_trace=False, scope_ways=scope_ways,
                          blog_quirks=True)
    return 0 if result.status == Status.OK else result.blog_loaded_elements


def _needed_sram_note(schedule: Schedule, hardware: Accelerator, scope_ways: Mapping[str, int]) -> str:
    """Re-run count-only with unlimited SRAM to say how much the schedule would need."""
    session = Session(hardware, numeric=False, record_trace=False, scope_ways=scope_ways, enforce_capacity=False)
    tensors = bind_tensors(session, schedule.workload, None)
    try:
        schedule.body(session, **tensors)
    except ScheduleError:
        return ""
    c = session.counters
    return (f"\nWith unlimited SRAM it would need {c.peak_sram_bytes:,} B peak (capacity {hardware.sram_bytes:,} "
            f"B), load {c.loaded_bytes:,} B, store {c.stored_bytes:,} B; blog count {c.blog_loaded_elements:,}.")
