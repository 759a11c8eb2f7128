"""A whole network as one trace: every entry's chosen schedule run count-only, in one `Session`, in data-flow order.

`trace_network(result, resolve)` takes a `NetworkResult` (one hardware, one SRAM size: each entry's best schedule
by the search) and runs each entry's schedule through its traced kernel (`ENTRY_RUNNERS`, a registry keyed by the
entry's schedule kind; the kernels live in `dsasim.kernels` and are reached through `resolve(KernelRef)` ->
(workload, execute), which the caller supplies, e.g. `dsasim.cli.common.import_kernel`: the library imports no
kernel). The trace is then timed as one timeline by the existing timing
model (`network_simulation`), whose within-layer rules (model.pyx) apply unchanged across layers.

The inter-layer rules (each stated again beside its code):
  * Order. Entries run in network order, except that an entry never runs before the entries whose results it
    reads (a residual add fused into a conv whose other operand, a projection, comes later in the graph's order:
    the projection runs first). A stable topological order of the entries by their reads.
  * Activations are shared DDR tensors. A layer's result is a writable DDR tensor named after the layer; a later
    layer whose operand is that result *with the same shape* reads the same `TracedArray`, so the model's DDR rule
    (a LOAD of a writable tensor's region waits for every earlier STORE to an overlapping region) lets it start on
    rows already stored, while its producer still computes.
  * Where the shapes differ (a flatten, a view, a batched matmul's repeats), or the reader slides over its input
    (a rotating buffer) or loads it strided (a 1x1 stride-2 conv), the consumer reads a read-only tensor
    of its own shape, and a fence keeps it from being optimistic: before its first load, one word of the
    producer's last element is loaded (per DMA load channel). The producer stores its last element last (every
    kernel's final tile holds every loop's last tile), stores run in program order on one store engine, and loads
    run in program order on each load channel: so every load of the consumer waits for every store of the
    producer. The fence's words are counted apart (`fence_bytes`) and left out of the comparison with the search.
  * Weights (and every operand no layer produced: the network's input, biases, norm parameters) are read-only
    DDR tensors of their own: their loads wait only for SRAM space (the slot rule, by the address map, as within
    a layer) and for the DDR port; so the next layer's weights stream in while the current layer computes (the
    inter-layer prefetch), as far as the engines' program order allows: each DMA engine runs its transfers in
    trace order, so a layer's loads never overtake an earlier layer's loads.
  * SRAM space. Each entry's buffers are freed when its scopes close; the next entry's buffers take the bytes the
    address map gives them, and their first fill waits for the previous occupants of those bytes (their final
    STOREs included). Capacity is enforced per entry, as the search checked it.
  * Results go through DDR: every result is stored to DDR and loaded again by its readers, unless a plan
    (`network_on_chip.OnChipPlan`, made from this trace without a plan: its rules are stated there) keeps it on
    chip. A kept result is an on-chip tensor held in one SRAM buffer at the plan's address (`Session.keep_on_chip`)
    from before its producer runs until its last reader has run (`Session.release_kept`): the producer's output
    tiles and every reader's tiles of it are hits in that buffer (no DMA), and the timing model's buffer rules
    order them (a reader's compute waits for the producer's last write of the buffer: a reader of a kept result
    starts computing when its producer has finished, never on rows already written).
  * Fused epilogues (a conv's bias, ReLU, a residual add fused into it) run on the vector unit on each output tile
    once it is final, before it is stored: their lane operations spread over the tiles in proportion to the
    tile's elements. The extra operands the model loads "beside" the schedule (the bias, a residual add's other
    operand, a chain's residual fold) are streamed in before the entry's own loads (chunks in their own 2-way
    scope), their bytes and port time counted; they are not held on chip (the model does not charge their
    SRAM either).
  * Levels below the SRAM (a "levelnest" entry: the layer's best `LevelNest`, run by `execute_levels`). Its
    stages into each inner level and write-backs from it run on that level's DMA engines; its epilogue runs on
    each final inner output tile, in the output's innermost level. A tensor's role picks its inner level (an
    input's, a weight's, a result's), so a level entry never reads an earlier result itself (its role is
    "output"): it reads a copy of its own, fenced after the producer (`_NestKernel.shares_results`). Per entry,
    each inner level's bytes staged in and written back are recorded beside the search's (`EntrySpan`).
  * Vector layers (pools, adds, norms) run a streaming kernel: each operand and the result cut along their leading
    rows into the same number of steps, each step's chunks loaded into a 2-way scope, one vector operation per
    result box (the layer's lane operations spread over the steps by elements), the result stored: it moves the
    bytes `_vector_outcome` counts exactly (its operands in full, its result once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from dsasim.architect.search.chain_kind import KernelRef
from dsasim.architect.studies.network import ATTENTION, CHAIN, TENSORCORE, VECTOR, NetworkLayer
from dsasim.errors import SramOverflowError
from dsasim.hardware import Accelerator

__all__ = ["ENTRY_RUNNERS", "EntrySpan", "LEVELNEST_KERNEL", "LOOPNEST_KERNEL", "NEST_KERNELS", "NetworkTrace", "NetworkTraceError", "entry_kind",
           "level_trace_seconds", "trace_network"]

LOOPNEST_KERNEL = KernelRef("dsasim.kernels.loopnest_kernel", "loopnest_workload", "execute")
LEVELNEST_KERNEL = KernelRef("dsasim.kernels.loopnest_kernel", "loopnest_workload", "execute_levels")
STREAM_SCOPE_WAYS = 2  # a streamed chunk's scope: the next chunk loads while this one is computed and stored


class NetworkTraceError(ValueError):
    """A network that cannot be traced as one session (an entry with no kernel, a layer left out)."""


@dataclass(frozen=True)
class EntrySpan:
    """One entry's part of the network's trace: its events [first_event, stop_event), in the order run."""

    name: str
    kind: str  # the schedule kind that ran it (`ENTRY_RUNNERS`)
    index: int  # its position in the NetworkResult's layers (network order)
    first_event: int
    stop_event: int
    fence_bytes: int  # words loaded only to order it after a producer whose shape differs (see the rules)
    model_loaded_bytes: int  # what the search's model counts for the entry
    model_stored_bytes: int
    traced_loaded_bytes: int  # what the trace moved (fence words included)
    traced_stored_bytes: int
    reads_on_chip_bytes: int = 0  # bytes of its shared inputs a layer could keep on chip (on_chip_savings)
    # per level below the SRAM (hardware order): (level, bytes staged in from its parent, bytes written back to it),
    # the search's model's (`LayerOutcome.level_bytes`) and the trace's; () on one-level hardware
    model_level_bytes: tuple[tuple[str, int, int], ...] = ()
    traced_level_bytes: tuple[tuple[str, int, int], ...] = ()
    peak_sram_bytes: int = 0  # its scopes' peak SRAM bytes (ways included; results kept on chip not counted)
    results: tuple[tuple[str, int], ...] = ()  # (name, bytes) of the result it leaves for later entries
    # (result name, bytes loaded, bytes stored) of every result tensor it moved by DDR (its own and earlier ones)
    result_bytes: tuple[tuple[str, int, int], ...] = ()
    kept_loaded_bytes: int = 0  # DDR bytes a plan's kept results saved it (by the trace through DDR)
    kept_stored_bytes: int = 0


@dataclass(frozen=True)
class NetworkTrace:
    """The network's trace (one session) and where each entry's events are."""

    trace: Any  # dsasim.traced.trace.Trace
    hardware: Accelerator
    spans: tuple[EntrySpan, ...]
    access_counts: Any = field(default=None, compare=False)
    copied: Mapping[str, str] = field(default_factory=dict)  # result name -> the first entry that read a copy of it
    plan: Any = None  # the OnChipPlan it ran with (None: every result through DDR)


Resolver = Callable[[KernelRef], tuple[Callable[..., Any], Callable[..., Any]]]


def entry_kind(outcome: Any) -> str:
    """The schedule kind of a NetworkResult entry (a key of ENTRY_RUNNERS): 'vector', 'loopnest', 'levelnest',
    'chain' or 'attention'."""
    kind = outcome.layer.kind
    if kind == VECTOR:
        return "vector"
    if kind == TENSORCORE:
        # the schedule says its own kind (`level_target.LEVELNEST_SCHEDULE`); a LoopNest's JSON names none
        from dsasim.architect.studies.level_target import LEVELNEST_SCHEDULE

        schedule = outcome.schedule or {}
        return LEVELNEST_SCHEDULE if schedule.get("kind") == LEVELNEST_SCHEDULE else "loopnest"
    if kind in (CHAIN, ATTENTION):
        return kind
    return kind


class _Tracer:
    """The session and the network's values (layer name -> its result's DDR tensor) while entries run."""

    def __init__(self, hardware: Accelerator, resolve: Resolver) -> None:
        from dsasim.traced.session import Session

        self.hardware = hardware
        self.resolve = resolve
        self.session = Session(hardware, numeric=False, record_trace=True, enforce_capacity=True)
        self.values: dict[str, Any] = {}  # layer name -> TracedArray of its result (writable, DDR)
        self.fence_bytes = 0
        self.on_chip_bytes = 0
        self.prefix = ""
        self.entry = ""  # the entry running
        self.last_result = ""  # the last result tensor made (an entry's own result is its last)
        self.copied: dict[str, str] = {}  # result name -> the first entry that read a copy of it it needs in DDR
        self.copies: dict[str, str] = {}  # a copy's tensor name -> the result it copies (a sliding/strided reader's)
        self.fence_words: dict[str, int] = {}  # result name -> the fence bytes loaded of it
        self.plan: Any = None  # an OnChipPlan, or None
        self.kept_tiles: dict[str, Any] = {}  # kept result name -> the Tile that holds it

    # -- tensors ----------------------------------------------------------------------------------------------
    def fresh_input(self, name: str, shape: tuple[int, ...], role: str = "input") -> Any:
        """A read-only DDR tensor of this entry (a weight, a parameter, an operand no layer produced)."""
        return self.session.input(f"{self.prefix}{name}", tuple(shape), role=role)

    def result(self, layer_name: str, shape: tuple[int, ...]) -> Any:
        """The DDR tensor of a layer's result (every element must be stored: `Session.output`); rule (results
        kept): one the plan keeps is an on-chip tensor held whole at its address until its last reader has run."""
        kept = self.plan.kept_named(layer_name) if self.plan is not None else None
        if kept is None:
            arr = self.session.output(f"{layer_name}", tuple(shape))
        else:
            arr = self.session.on_chip(f"{layer_name}", tuple(shape))
            self.kept_tiles[layer_name] = self.session.keep_on_chip(arr, kept.address)
        self.values[layer_name] = arr
        self.last_result = layer_name
        return arr

    def operand(self, producer: str, name: str, shape: tuple[int, ...], role: str = "input") -> Any:
        """Rule (activations shared): the producer's result itself when its shape is `shape`; else (a view, an
        unknown producer) a read-only tensor of this entry, fenced after the producer's stores when the producer is
        known (rule: the consumer's loads wait for the whole producer)."""
        shape = tuple(shape)
        value = self.values.get(producer) if producer else None
        if value is not None and tuple(value.shape) == shape:
            self.on_chip_bytes += value.nbytes
            return value
        if value is not None:
            self.fence(value)
        return self.fresh_input(name, shape, role)

    def copy(self, producer: str, name: str, shape: tuple[int, ...], role: str) -> Any:
        """A sliding or strided reader's operand (rule: fences): a read-only copy of the producer's result fenced
        after it; or, where the plan keeps that result on chip and the shapes agree, the kept result itself (a slide
        or a strided box of a kept buffer is a hit: every row is on chip already)."""
        value = self.values[producer]
        if tuple(value.shape) != tuple(shape):
            return self.operand(producer, name, shape, role)  # a view: fenced, needed in DDR
        if producer in self.kept_tiles:
            self.on_chip_bytes += value.nbytes
            return value
        self.fence(value, needs_ddr=False)
        arr = self.fresh_input(name, shape, role)
        self.copies[arr.name] = producer
        return arr

    def fence(self, value: Any, needs_ddr: bool = True) -> None:
        """One word of `value`'s last element loaded per DMA load channel (see the module docstring: every later
        load waits for every store of `value`). `needs_ddr`: the reader needs the result in DDR (a view of another
        shape), so it cannot be kept on chip (`network_on_chip`); a sliding or strided reader does not."""
        from dsasim import GlobalHierarchy

        if needs_ddr:
            self.copied.setdefault(value.name, self.entry)
        last = tuple((d - 1, d) for d in value.shape)
        for _ in range(self.hardware.dma_load_channels):
            with GlobalHierarchy(self.session, "fence"):
                value[last]
            self.fence_bytes += self.hardware.word_bytes
            self.fence_words[value.name] = self.fence_words.get(value.name, 0) + self.hardware.word_bytes

    # -- streaming (vector layers, extra operands) --------------------------------------------------------------
    def stream_load(self, arrays: Sequence[Any]) -> None:
        """Load `arrays` in full, in chunks of their leading rows, each chunk in its own 2-way scope (an extra
        operand the model loads beside a schedule: bytes and port time, not held)."""
        from dsasim import GlobalHierarchy

        arrays = [a for a in arrays if a is not None]
        if not arrays:
            return
        plan = _stream_plan([tuple(a.shape) for a in arrays], self.hardware, None)
        for step in range(plan.steps):
            with GlobalHierarchy(self.session, "extra", ways=STREAM_SCOPE_WAYS):
                for a, rows in zip(arrays, plan.rows):
                    for box in rows.boxes(step, plan.steps):
                        a[box]


@dataclass(frozen=True)
class _Rows:
    """A tensor cut into rows: every index combination of its first `depth` axes (each row a box)."""

    shape: tuple[int, ...]
    depth: int

    @property
    def count(self) -> int:
        return math.prod(self.shape[:self.depth])

    def boxes(self, step: int, steps: int) -> list[tuple[tuple[int, int], ...]]:
        """The boxes covering rows [step * count // steps, (step + 1) * count // steps): one per run of rows that
        share their indexes but the last row axis."""
        n = self.count
        r0, r1 = step * n // steps, (step + 1) * n // steps
        out = []
        inner = self.shape[self.depth - 1] if self.depth else 1
        r = r0
        while r < r1:
            stop = min(r1, (r // inner + 1) * inner)  # the run ends where the row axes above the last change
            # decompose r into the first depth - 1 axes (outer) and the last row axis
            outer, pos = divmod(r, inner)
            prefix = []
            for d in reversed(self.shape[:self.depth - 1]):
                outer, i = divmod(outer, d)
                prefix.append(i)
            prefix.reverse()
            box = [(i, i + 1) for i in prefix]
            if self.depth:
                box.append((pos, pos + stop - r))
            box.extend((0, d) for d in self.shape[self.depth:])
            out.append(tuple(box))
            r = stop
        return out


@dataclass(frozen=True)
class _StreamPlan:
    steps: int
    rows: tuple[_Rows, ...]


def _stream_plan(shapes: Sequence[tuple[int, ...]], hardware: Accelerator, out_rows: int | None) -> _StreamPlan:
    """How to stream tensors of `shapes` through the SRAM: rows deep enough that one row of every tensor fits in
    an eighth of the SRAM, and enough steps that a step's chunks (2-way) take at most half of it (no more steps than
    the result has rows, `out_rows`, so that every step computes)."""
    wb, budget = hardware.word_bytes, hardware.sram_bytes
    rows = []
    for shape in shapes:
        depth = 0
        while depth < len(shape) and math.prod(shape[depth:]) * wb * len(shapes) * 8 > budget:
            depth += 1
        rows.append(_Rows(tuple(shape), max(depth, 1) if len(shape) else 0))
    total = sum(math.prod(s) for s in shapes) * wb
    steps = max(1, -(-total * 2 * STREAM_SCOPE_WAYS // budget))
    steps = min(steps, max(r.count for r in rows))
    if out_rows is not None:
        steps = min(steps, out_rows)
    return _StreamPlan(max(1, steps), tuple(rows))


# ------------------------------------------------------------------------------------------------ entry runners
def _epilogue(tracer: _Tracer, total_ops: int, total_elements: int) -> Callable[[Any], None] | None:
    """A fused epilogue: `total_ops` lane operations over `total_elements` output elements, each final output tile
    taking its share (cumulative rounding: the shares sum to total_ops)."""
    if total_ops <= 0 or total_elements <= 0:
        return None
    from dsasim.traced.tensorcore import Product

    lanes, done = tracer.hardware.vector_lanes, [0]

    def run(tile: Any) -> None:
        elements = math.prod(tile.shape)
        before, done[0] = done[0], done[0] + elements
        ops = done[0] * total_ops // total_elements - before * total_ops // total_elements
        product = Product(tracer.session, "vector", "epilogue", (tile,), tuple(tile.shape), 0, -(-ops // lanes), 0,
                          _no_kernel)
        product.lane_ops = ops
        tile.assign(product)

    return run


def _no_kernel(*_: Any) -> Any:  # count-only: never called
    raise AssertionError("the network trace is count-only")


def _extras(tracer: _Tracer, layer: NetworkLayer, bias_elements: int, skip: str, skip_elements: int) -> None:
    """The operands loaded beside a schedule: the bias (its own tensor) and a residual add's other operand (the
    producer's result when known, else a tensor of its own), streamed before the entry's loads."""
    arrays = []
    if bias_elements:
        arrays.append(tracer.fresh_input("bias", (bias_elements,), role="weight"))
    if skip_elements:
        value = tracer.values.get(skip) if skip else None
        if value is not None and value.nbytes == skip_elements * tracer.hardware.word_bytes:
            arrays.append(value)  # a DDR read of a writable tensor: waits for its producer's stores (RAW)
        else:
            if value is not None:
                tracer.fence(value)
            arrays.append(tracer.fresh_input("skip", (skip_elements,)))
    tracer.stream_load(arrays)


def _run_nest(tracer: _Tracer, nest: Any, reads: Sequence[str], out_name: str, relu_ops: int,
              out_value: tuple[int, ...] | None, repeat: int = 0) -> None:
    """One LoopNest or LevelNest (a layer or a chain's unfused part) over shared inputs: each non-weight input in
    order is `reads`' next value; the result is `out_name`'s DDR tensor; the nest runs by its `NEST_KERNELS` entry."""
    from dsasim.architect.model.hierarchy import tensor_role

    kernel = NEST_KERNELS[type(nest).__name__]
    workload_of, execute = tracer.resolve(kernel.ref)
    workload = workload_of(nest.problem)
    sram_nest = kernel.sram_nest(nest)  # the loops over the SRAM: what slides there
    tensors, pending = {}, list(reads)
    for name, shape in workload.inputs.items():
        role = tensor_role(nest.problem, name)
        producer = pending.pop(0) if pending else ""
        if repeat:
            producer = ""  # a batched layer's repeats: operands of their own (fenced once, before repeat 0)
        spec = nest.problem.tensor(name)
        strided = not sram_nest.slides(name) and any(a.is_window and a.stride > 1 for a in spec.axes)
        if not kernel.shares_results and producer in tracer.values:
            # rule: on levels below the SRAM a reader reads a read-only copy fenced after its producer
            tracer.fence(tracer.values[producer])
            producer = ""
        if (strided or sram_nest.slides(name)) and producer in tracer.values:
            # rule: a strided reader (a 1x1 stride-2 conv loads every other row) or a sliding one (a rotating
            # buffer keeps rows on chip) reads a read-only copy, fenced after its producer: the session checks a
            # written tensor's buffers as dense boxes only, and lets only read-only tensors slide (a result kept
            # on chip is read in place: `_Tracer.copy`)
            tensors[name] = tracer.copy(producer, name, shape, role)
            continue
        tensors[name] = (tracer.operand(producer, name, shape, role) if producer
                         else tracer.fresh_input(f"{name}#{repeat}" if repeat else name, shape, role))
    (out, shape), = workload.outputs.items()
    tensors[out] = (tracer.result(out_name, shape) if out_value is not None and not repeat
                    else tracer.session.output(f"{tracer.prefix}{out}#{repeat}", shape))
    epilogue = _epilogue(tracer, relu_ops, math.prod(shape))
    kernel.call(execute, nest, tracer.session, tensors, epilogue)


def _call_loopnest(execute: Callable[..., None], nest: Any, session: Any, tensors: Mapping[str, Any],
                   epilogue: Callable[[Any], None] | None) -> None:
    """`execute` of a LoopNest: strided boxes (only the rows a stride reads, as `analytic` counts them)."""
    execute(nest, session, tensors, strided_boxes=True, epilogue=epilogue)


def _call_levelnest(execute: Callable[..., None], nest: Any, session: Any, tensors: Mapping[str, Any],
                    epilogue: Callable[[Any], None] | None) -> None:
    """`execute_levels` of a LevelNest: dense boxes (as the hierarchy model counts them)."""
    execute(nest, session, tensors, epilogue=epilogue)


@dataclass(frozen=True)
class _NestKernel:
    """How a nest type runs in the network's trace: its kernel, how `execute` is called, its loops over the SRAM."""

    ref: KernelRef
    call: Callable[[Callable[..., None], Any, Any, Mapping[str, Any], Callable[[Any], None] | None], None]
    sram_nest: Callable[[Any], Any]  # the LoopNest whose scopes are in the SRAM (a LevelNest's outer nest)
    # whether a reader may load its producer's result itself (rule: activations shared); not on levels below the
    # SRAM, where a tensor's role picks its inner level (inputs in one, results in another: a result read as an
    # input would be refused), so a reader loads a read-only copy fenced after its producer (rule: fences)
    shares_results: bool


# the nest types a tensorcore entry runs, by class name (LoopNest: one level; LevelNest: levels below the SRAM)
NEST_KERNELS: dict[str, _NestKernel] = {
    "LoopNest": _NestKernel(LOOPNEST_KERNEL, _call_loopnest, lambda nest: nest, shares_results=True),
    "LevelNest": _NestKernel(LEVELNEST_KERNEL, _call_levelnest, lambda nest: nest.outer, shares_results=False),
}


def _run_loopnest(tracer: _Tracer, outcome: Any, network: Any) -> None:
    """A tensorcore layer on one level: its extras streamed, then its LoopNest `count` times (rules: see the module
    docstring)."""
    from dsasim.architect.nests.loopnest import LoopNest

    _run_tensorcore(tracer, outcome, LoopNest.from_json(outcome.schedule))


def _run_levelnest(tracer: _Tracer, outcome: Any, network: Any) -> None:
    """A tensorcore layer on levels below the SRAM: as `_run_loopnest`, its LevelNest run by `execute_levels`
    (each inner level's stages and write-backs traced, timed on that level's DMA engines)."""
    from dsasim.architect.model.hierarchy import LevelNest

    _run_tensorcore(tracer, outcome, LevelNest.from_json(outcome.schedule, tracer.hardware))


def level_trace_seconds(result: Any) -> float:
    """The estimated seconds of tracing a network's LevelNest entries (`estimate_level_trace_work` per entry, times
    its repeats): the levels below the SRAM are traced one TensorCore step at a time (their stages and scopes in
    Python), so a large network on levels takes minutes where the same network on one level takes seconds (0.0: no
    such entry)."""
    from dsasim.architect.model.hierarchy import LevelNest
    from dsasim.architect.search.level_search import estimate_level_trace_work

    hardware = replace_sram(result.hardware, result.sram_bytes)
    return sum(estimate_level_trace_work(LevelNest.from_json(x.schedule, hardware)).seconds * x.layer.count
               for x in result.layers if entry_kind(x) == "levelnest")


def _run_tensorcore(tracer: _Tracer, outcome: Any, nest: Any) -> None:
    """A tensorcore layer: its extras streamed, then `nest` `count` times (rules: see the module docstring)."""
    layer = outcome.layer
    reads = list(layer.reads)
    if layer.count > 1:  # every repeat's operands are its own: fence the producers once, before the first
        for producer in dict.fromkeys(reads):
            if producer in tracer.values:
                tracer.fence(tracer.values[producer])
        reads = []
    _extras(tracer, layer, layer.bias_elements, layer.skip_read, layer.extra_read_elements)
    per_repeat = layer.epilogue_ops // layer.count
    for r in range(layer.count):
        ops = per_repeat + (layer.epilogue_ops - per_repeat * layer.count if r == layer.count - 1 else 0)
        _run_nest(tracer, nest, reads, layer.name, ops, layer.out_shape if layer.count == 1 else None, r)
    if layer.count > 1 or layer.name not in tracer.values:
        tracer.values.pop(layer.name, None)  # its consumers fence nothing: it has no single DDR result


def _run_vector(tracer: _Tracer, outcome: Any, network: Any) -> None:
    """A vector layer: the streaming kernel (rules: see the module docstring)."""
    from dsasim import GlobalHierarchy
    from dsasim.traced.tensorcore import Product

    layer, wb = outcome.layer, tracer.hardware.word_bytes
    inputs, known = [], 0
    for i, producer in enumerate(layer.reads):
        value = tracer.values.get(producer) if producer else None
        if value is not None and known + value.nbytes // wb <= layer.read_elements:
            inputs.append(value)  # read in full, by the shared tensor (RAW on its regions)
            known += value.nbytes // wb
    rest = layer.read_elements - known
    if rest:  # what no produced value covers: the network's input, parameters, an operand read through a view
        for producer in dict.fromkeys(layer.reads):
            value = tracer.values.get(producer) if producer else None
            if value is not None and all(value is not a for a in inputs):
                tracer.fence(value)
        inputs.append(tracer.fresh_input("operands", (rest,)))
    if not layer.write_elements:
        raise NetworkTraceError(f"cannot simulate vector layer {layer.name}: it writes nothing to DDR (the "
                                f"streaming kernel computes into its result's tiles)")
    shape = layer.out_shape if layer.out_shape and math.prod(layer.out_shape) == layer.write_elements \
        else (layer.write_elements,)
    out = tracer.result(layer.name, shape)
    shapes = [tuple(a.shape) for a in inputs] + [tuple(out.shape)]
    plan = _stream_plan(shapes, tracer.hardware, _stream_plan(shapes, tracer.hardware, None).rows[-1].count)
    lanes, total, done = tracer.hardware.vector_lanes, layer.vector_ops, 0
    out_elements = layer.write_elements
    for step in range(plan.steps):
        with GlobalHierarchy(tracer.session, "stream", ways=STREAM_SCOPE_WAYS):
            tiles = [a[box] for a, rows in zip(inputs, plan.rows) for box in rows.boxes(step, plan.steps)]
            for box in plan.rows[-1].boxes(step, plan.steps):
                tile = out[box]
                elements = math.prod(b - a for a, b in box)
                ops = (done + elements) * total // out_elements - done * total // out_elements
                done += elements
                p = Product(tracer.session, "vector", layer.op, tuple(tiles) or (tile,), tuple(tile.shape), 0,
                            -(-ops // lanes), 0, _no_kernel)
                p.lane_ops = ops
                tile.assign(p)


def _run_chain(tracer: _Tracer, outcome: Any, network: Any) -> None:
    """A chain: its extras (members' biases, a projection's output) streamed, then each segment of its best
    partition in order (a fused segment by its chain kind's kernel, an unfused one as a LoopNest), each segment's
    result a DDR tensor read by the next; a residual the last segment does not fuse is folded by loading the
    chain's input once more before the last segment (`fused_search`'s fold)."""
    from dsasim.architect.nests.loopnest import LoopNest
    from dsasim.architect.search.chain_kinds import chain_kind_of

    layer = outcome.layer
    nc = next(c for c in network.chains if "+".join(network.layers[i].name for i in c.members) == layer.name)
    members = [network.layers[i] for i in nc.members]
    chain = nc.chain
    first_read = members[0].reads[0] if members[0].reads else ""
    last = members[-1]
    skip_elements = 0 if chain.residual else last.extra_read_elements
    _extras(tracer, layer, sum(m.bias_elements for m in members), last.skip_read, skip_elements)
    parts = outcome.schedule["segments"]
    source, k0 = first_read, 0
    for part_index, part in enumerate(parts):
        # a part's layers by position (one search serves every chain of this shape: its names are the first's)
        k0, k1 = k0 + (len(parts[part_index - 1]["layers"]) if part_index else 0), None
        k1 = k0 + len(part["layers"]) - 1
        names = [m.name for m in members[k0:k1 + 1]]
        final = part_index == len(parts) - 1
        if final and chain.residual and not (part["fused"] and k0 == 0):
            value = tracer.values.get(first_read)
            tracer.stream_load([value if value is not None else
                                tracer.fresh_input("residual", tuple(chain.input_shape))])
        out_name = last.name if final else members[k1].name
        if part["fused"]:
            kind = chain_kind_of(chain)
            workload_of, execute = tracer.resolve(kind.kernel)
            nest = _fused_nest_of(part["fused_nest"], kind)
            workload = workload_of(nest.chain)
            tensors = {}
            ins = list(workload.inputs.items())
            slides = getattr(nest, "halo", None) == "keep"  # its image is a rotating buffer: read-only only
            for j, (name, shape) in enumerate(ins):
                if j:
                    tensors[name] = tracer.fresh_input(f"{names[0]}.{name}", shape, role="weight")
                elif slides and source in tracer.values:  # rule: a sliding reader reads a fenced copy (_run_nest)
                    tensors[name] = tracer.copy(source, name, shape, "input")
                else:
                    tensors[name] = tracer.operand("" if slides else source, name, shape)
            (oname, oshape), = workload.outputs.items()
            tensors[oname] = tracer.result(out_name, oshape)
            with _prefixed_on_chip(tracer.session, f"{layer.name}/{part_index}/"):
                execute(nest, tracer.session, tensors)
        else:
            nest = LoopNest.from_json(part["loop_nest"])
            relu_ops = math.prod(nest.problem.shape(nest.problem.output.name)) if chain.relu[k0] else 0
            saved = tracer.prefix
            tracer.prefix = f"{names[0]}:"
            _run_nest(tracer, nest, [source], out_name, relu_ops, (1,))
            tracer.prefix = saved
        source = out_name


def _fused_nest_of(data: Mapping[str, Any], kind: Any) -> Any:
    """A chain part's fused nest from its JSON (a conv chain's FusedNest, a GEMM chain's GemmChainNest)."""
    from dsasim.architect.model.fused import FusedNest
    from dsasim.architect.search.gemm_chain import GemmChainNest

    return (FusedNest if kind.name == "conv" else GemmChainNest).from_json(data)


class _prefixed_on_chip:
    """Within the block, `session.on_chip(name, ...)` names its tensor `prefix + name`: each fused segment's
    on-chip intermediates (mid1, C) are tensors of their own in the one session, whose names must be unique."""

    def __init__(self, session: Any, prefix: str) -> None:
        self.session, self.prefix = session, prefix

    def __enter__(self) -> None:
        original = type(self.session).on_chip
        session, prefix = self.session, self.prefix
        self.session.on_chip = lambda name, shape: original(session, prefix + name, shape)

    def __exit__(self, *exc: Any) -> None:
        del self.session.on_chip


ATTENTION_KERNEL = KernelRef("dsasim.kernels.attention_kernel", "attention_workload", "execute_attention")


def _run_attention(tracer: _Tracer, outcome: Any, network: Any) -> None:
    """An attention group: Q, K and V are views (heads split out) of their producers' results, so each is a fenced
    read-only tensor of its own (rule: shapes differ); the mask is streamed beside it; its DDR intermediates (S, P;
    M, L) are tensors of its own; O is the result its output matmul's readers read. The mask's additions (one lane
    operation per score, which the estimate adds after the schedule's cycles) are not traced."""
    from dsasim.architect.nests.attention_schedule import AttentionSchedule

    members = _member_layers(network, outcome)
    scores, output = members[0], members[-1]
    sch = AttentionSchedule.from_json(outcome.schedule)
    workload_of, execute = tracer.resolve(ATTENTION_KERNEL)
    workload = workload_of(sch.problem, sch.kind)
    for producer in dict.fromkeys((*scores.reads, *output.reads[1:])):
        if producer in tracer.values:
            tracer.fence(tracer.values[producer])
    _extras(tracer, scores, 0, "", scores.extra_read_elements)
    tensors = {name: tracer.fresh_input(name, shape, role=workload.roles.get(name, "input"))
               for name, shape in workload.inputs.items()}
    tensors.update((name, tracer.session.intermediate(f"{tracer.prefix}{name}", shape))
                   for name, shape in workload.intermediates.items())
    (oname, oshape), = workload.outputs.items()
    tensors[oname] = tracer.result(output.name, oshape)
    with _prefixed_on_chip(tracer.session, tracer.prefix):
        execute(sch, tracer.session, tensors)


# the entry runners by schedule kind (`entry_kind`); a kind not here is refused with one line
ENTRY_RUNNERS: dict[str, Callable[[_Tracer, Any, Any], None]] = {
    "loopnest": _run_loopnest,
    "levelnest": _run_levelnest,
    "vector": _run_vector,
    "chain": _run_chain,
    "attention": _run_attention,
}


def _data_flow_order(result: Any) -> list[int]:
    """Rule (order): network order, except that an entry runs after the entries whose results it reads (a stable
    topological order: at each step the first entry in network order whose producers have all run)."""
    entries = result.layers
    produced_by: dict[str, int] = {}
    for i, x in enumerate(entries):
        for name in x.layer.name.split("+"):
            produced_by[name] = i
        for name in x.layer.fused:
            produced_by.setdefault(name, i)
    members = {i: _member_layers(result.network, x) for i, x in enumerate(entries)}
    needs = {}
    for i, x in enumerate(entries):
        reads = set()
        for m in members[i]:
            reads.update(r for r in (*m.reads, m.skip_read) if r)
        needs[i] = {produced_by[r] for r in reads if r in produced_by and produced_by[r] != i}
    done: set[int] = set()
    order: list[int] = []
    while len(order) < len(entries):
        for i in range(len(entries)):
            if i not in done and needs[i] <= done:
                order.append(i)
                done.add(i)
                break
        else:  # a cycle (never for a traced graph): keep network order for the rest
            order.extend(i for i in range(len(entries)) if i not in done)
            break
    return order


def _member_layers(network: Any, outcome: Any) -> list[NetworkLayer]:
    """The network's layers an entry stands for (a chain's or attention group's members, else the layer)."""
    names = outcome.layer.name.split("+")
    found = [layer for layer in network.layers if layer.name in names]
    return found or [outcome.layer]


def trace_network(result: Any, resolve: Resolver, plan: Any = None) -> NetworkTrace:
    """Run every entry of `result` (a NetworkResult) count-only in one session, in data-flow order (the rules:
    module docstring), every result through DDR or (`plan`, a `network_on_chip.OnChipPlan`) the plan's results
    kept on chip; NetworkTraceError (one line) for a result that leaves a layer out or an entry whose schedule
    kind has no runner. The trace's bytes per entry are checked against the search's by the caller
    (`network_simulation.simulate_network`)."""
    if result.partial:
        raise NetworkTraceError(f"cannot simulate {result.network.name}: layer(s) left out of the totals "
                                f"({', '.join(result.left_out)}); only a whole network is traced")
    for x in result.layers:
        kind = entry_kind(x)
        if kind not in ENTRY_RUNNERS:
            raise NetworkTraceError(f"cannot simulate {result.network.name}: entry {x.layer.name} is a {kind} "
                                    f"schedule, which the network trace has no kernel for yet (known: "
                                    f"{', '.join(sorted(ENTRY_RUNNERS))}); try --no-fusion")
    tracer = _Tracer(replace_sram(result.hardware, result.sram_bytes), resolve)
    tracer.plan = plan
    saved = {} if plan is None else {name: (loaded, stored) for name, loaded, stored in plan.saved_by_entry}
    releases: dict[str, list[str]] = {}  # entry -> the kept results its end releases (it is their last reader)
    for k in (plan.kept if plan is not None else ()):
        releases.setdefault(k.readers[-1], []).append(k.name)
    log = tracer.session.trace.log
    spans, network_peak = [], 0
    for i in _data_flow_order(result):
        x = result.layers[i]
        kind = entry_kind(x)
        first, fence0, onchip0 = len(log), tracer.fence_bytes, tracer.on_chip_bytes
        counters = tracer.session.counters
        loaded0, stored0 = counters.loaded_bytes, counters.stored_bytes
        levels0 = _level_bytes(tracer)
        moved0 = _result_traffic(tracer)
        counters.peak_sram_bytes = tracer.session.live_sram_bytes  # its own peak, measured below
        tracer.prefix, tracer.entry, tracer.last_result = f"{x.layer.name}:", x.layer.name, ""
        try:
            ENTRY_RUNNERS[kind](tracer, x, result.network)
        except SramOverflowError as err:  # only with a plan, whose fit rule should have prevented it
            raise NetworkTraceError(f"cannot keep results on chip in {result.network.name}: entry {x.layer.name} "
                                    f"overflows the SRAM beside them ({str(err).splitlines()[0]})") from None
        for name in releases.get(x.layer.name, ()):
            tracer.session.release_kept(tracer.kept_tiles.pop(name))
        peak = int(counters.peak_sram_bytes)
        network_peak = max(network_peak, peak)
        levels = tuple((name, loaded - b[1], stored - b[2])
                       for (name, loaded, stored), b in zip(_level_bytes(tracer), levels0))
        moved = tuple((name, loaded - moved0.get(name, (0, 0))[0], stored - moved0.get(name, (0, 0))[1])
                      for name, (loaded, stored) in _result_traffic(tracer).items()
                      if (loaded, stored) != moved0.get(name, (0, 0)))
        own = tracer.last_result
        results = ((own, tracer.values[own].nbytes),) if own and own in tracer.values else ()
        spans.append(EntrySpan(name=x.layer.name, kind=kind, index=i, first_event=first, stop_event=len(log),
                               fence_bytes=tracer.fence_bytes - fence0, model_loaded_bytes=x.loaded_bytes,
                               model_stored_bytes=x.stored_bytes,
                               traced_loaded_bytes=counters.loaded_bytes - loaded0,
                               traced_stored_bytes=counters.stored_bytes - stored0,
                               reads_on_chip_bytes=tracer.on_chip_bytes - onchip0,
                               model_level_bytes=_model_level_bytes(x, tracer.hardware),
                               traced_level_bytes=levels, peak_sram_bytes=peak, results=results,
                               result_bytes=moved, kept_loaded_bytes=saved.get(x.layer.name, (0, 0))[0],
                               kept_stored_bytes=saved.get(x.layer.name, (0, 0))[1]))
    tracer.session.counters.peak_sram_bytes = network_peak
    trace = tracer.session.finish()
    return NetworkTrace(trace=trace, hardware=tracer.hardware, spans=tuple(spans), copied=dict(tracer.copied),
                        plan=plan)


def _result_traffic(tracer: _Tracer) -> dict[str, tuple[int, int]]:
    """The DDR bytes (loaded, stored) moved so far of each result tensor (a layer's output in `tracer.values`): its
    own loads (fence words apart) and stores, and the loads of its copies (a sliding or strided reader's)."""
    per_tensor = tracer.session.counters.per_tensor
    out = {name: (int(per_tensor[name].loaded_bytes) - tracer.fence_words.get(name, 0),
                  int(per_tensor[name].stored_bytes)) for name in tracer.values if name in per_tensor}
    for copy, producer in tracer.copies.items():
        if producer in out:
            loaded, stored = out[producer]
            out[producer] = (loaded + int(per_tensor[copy].loaded_bytes), stored)
    return out


def _level_bytes(tracer: _Tracer) -> tuple[tuple[str, int, int], ...]:
    """The session's bytes so far per level below the SRAM (hardware order): (level, staged in, written back)."""
    traffic = tracer.session.counters.levels
    return tuple((lv.name, traffic[lv.name].loaded_bytes if lv.name in traffic else 0,
                  traffic[lv.name].stored_bytes if lv.name in traffic else 0) for lv in tracer.hardware.inner_levels)


def _model_level_bytes(outcome: Any, hardware: Accelerator) -> tuple[tuple[str, int, int], ...]:
    """The search's bytes per level below the SRAM for an entry, every level of `hardware` listed (a level the
    entry does not use, or a streaming entry that uses none, moves 0)."""
    found = {name: (loaded, stored) for name, loaded, stored in outcome.level_bytes}
    return tuple((lv.name, *found.get(lv.name, (0, 0))) for lv in hardware.inner_levels)


def replace_sram(hardware: Accelerator, sram_bytes: int) -> Accelerator:
    """`hardware` with its SRAM at `sram_bytes` (the size the entries were searched under)."""
    from dataclasses import replace

    return replace(hardware, sram_bytes=sram_bytes)
