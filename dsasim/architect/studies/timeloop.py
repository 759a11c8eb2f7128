"""Timeloop's YAML (v0.4) in and out: a problem, an architecture and a mapping as a dsasim `LoopNest` on an
`Accelerator`, their counts in Timeloop's terms, and a nest written back as the three files.

In (`read_timeloop`): the subset that covers conv and matmul problems on two or three storage levels.

* Problem: three data spaces, one of them `read_write` (the output). Each projection entry is one dimension
  (`[[K]]`) or a window of two (`[[R, Wdilation], [P, Wstride]]`: an output position, which the output is indexed
  by, and a kernel tap, which the other input is indexed by). A data space with a window is the image of a conv,
  the other input its weight; the roles of the dimensions follow from which data spaces they index (batch: image
  and output; input channels: image and weight; output channels: weight and output), the first window being the
  width (Timeloop's CNN layer: R with P) and the second the height (S with Q). Without a window the problem is a
  matmul: the first input is `a` (M x K), the second `b` (K x N). Padding does not exist in Timeloop's problems:
  the input extent is (P - 1) x stride + (R - 1) x dilation + 1.
* Architecture: the `!Component`s in order, outermost first; the last is the arithmetic unit (one MAC), the others
  storage. The outermost storage level is dsasim's DDR (its `read_bandwidth`, words per cycle, the DDR port), the
  next its SRAM (depth x width bits), a third (if any) a level below the SRAM. A `spatial` fan-out above 1 is
  refused: dsasim models one PE.
* Mapping: per storage level, temporal `factors` (a dimension left out: 1) and a `permutation` (innermost first,
  Timeloop's order); `dataspace` entries keep, or bypass at the lowest of three levels (dsasim's SRAM holds every
  tensor). The product of a dimension's factors must be its size.
  The nest: the outer level's loops in its permutation (outermost first), tiles the product of the factors below; each
  tensor staged just inside the innermost loop with more than one trip that indexes it (Timeloop keeps a tile
  across the innermost loops that do not index it), and an input slides along that loop when it is one of its
  output-position loops (Timeloop's delta between consecutive tiles). The inner level's own permutation does not
  change a count: the MAC reads every operand once per MAC from the buffer (dsasim's TensorCore is 1 x 1 here,
  with the `no_local_reuse` dataflow). On three levels the nest is a `LevelNest`: the middle level's loops are its
  inner loops over the SRAM tile, the lowest level's factors their tile, each tensor that level holds staged by the
  same rule among the inner loops (or, indexed by none with more than one trip, where the SRAM holds it).

Counts (`timeloop_counts`): dsasim's bytes per tensor and level (`AccessCounts` of the traced run) in Timeloop's
words: the backing store's reads (every load, partial sums reloaded included) and updates (every store); a
buffer's fills (its writes by a load from its parent), reads (by the level below or the MAC, less the drain: dsasim's
write-back of a finished output reads it, Timeloop does not count that read) and updates (the writes of partial
sums from below). Where the two tools count the same schedule differently the rule is named (`rule_differences`):
sliding-window reuse along a kernel-tap loop, sliding below the SRAM, the drain read, and the bounding box of a
strided input.

Out (`timeloop_files`): a two-level `LoopNest` that Timeloop can express (no padding, tiles that divide, tensors
staged where Timeloop keeps them) as the three files; `read_timeloop` of them gives the nest back (ways aside:
Timeloop has no double buffering).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from dsasim.architect.model.hierarchy import InnerTiling, LevelNest, tensor_role
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem, Problem, tile_count
from dsasim.geometry import window_step
from dsasim.hardware import DDR, SRAM_LEVEL, Accelerator, MemoryLevel, load_hardware

__all__ = ["TimeloopFormatError", "TimeloopLevel", "TimeloopInput", "TimeloopCount", "read_timeloop",
           "timeloop_counts", "rule_differences", "timeloop_files", "timeloop_hardware_priced", "check_exportable",
           "FILE_NAMES"]

VERSIONS = ("0.4",)
FILE_NAMES = {"problem": "problem.yaml", "arch": "arch.yaml", "mapping": "map.yaml"}  # what `search --timeloop` writes
COMPUTE_CLASSES = ("intmac", "fpmac", "mac", "compute", "intmac_int8", "aladdin_multiplier")
# attributes dsasim reads from a component, and those only Accelergy reads (their energy comes from its tables)
STORAGE_ATTRIBUTES = ("depth", "width", "datawidth", "block_size", "read_bandwidth", "write_bandwidth")
ENERGY_ATTRIBUTES = ("technology", "global_cycle_seconds", "n_banks", "cluster_size", "latency", "num_ports",
                     "word_bits", "n_rdwr_ports", "n_rd_ports", "n_wr_ports", "type", "meshX", "meshY")
NODE_KEYS = {"Component": ("name", "class", "attributes", "spatial"), "Container": ("name", "attributes", "spatial")}
MAPPING_KEYS = {"temporal": ("target", "type", "factors", "permutation"),
                "spatial": ("target", "type", "factors", "permutation", "split"),
                "dataspace": ("target", "type", "keep", "bypass")}


class TimeloopFormatError(ValueError):
    """A Timeloop file dsasim cannot read: its message names the file, the entry and what is wrong."""


def _fail(path: Path | str, entry: str, what: str) -> TimeloopFormatError:
    return TimeloopFormatError(f"{path}: {entry}: {what}")


# -- YAML ---------------------------------------------------------------------------------------------------------
def _loader() -> Any:
    """A safe YAML loader that reads Timeloop's node tags (`!Component`, `!Container`) as a `__tag__` key."""
    import yaml

    class TimeloopLoader(yaml.SafeLoader):
        pass

    def tagged(loader: Any, suffix: str, node: Any) -> Any:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(None, None, f"tag !{suffix} on a non-mapping", node.start_mark)
        data = loader.construct_mapping(node, deep=True)
        data["__tag__"] = suffix
        return data

    TimeloopLoader.add_multi_constructor("!", tagged)
    return TimeloopLoader


def _load(path: Path, top: str) -> Any:
    """The `top` entry of a Timeloop YAML file; TimeloopFormatError naming the file otherwise."""
    import yaml

    if not path.is_file():
        raise _fail(path, "file", "does not exist or is not a file; give the path of a Timeloop "
                                  f"{top} YAML file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise _fail(path, "file", f"not UTF-8 text (byte {err.start})") from None
    try:
        document = yaml.load(text, Loader=_loader())  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f"line {mark.line + 1}" if mark is not None else "file"
        raise _fail(path, line, f"not valid YAML: {getattr(err, 'problem', None) or err}") from None
    if not isinstance(document, dict) or top not in document:
        found = sorted(map(str, document)) if isinstance(document, dict) else type(document).__name__
        raise _fail(path, "top level", f"no {top!r} key (found {found}); is it a Timeloop {top} file?")
    extra = sorted(str(k) for k in document if k != top)
    if extra:
        raise _fail(path, "top level", f"unknown key(s) {extra}: dsasim reads one {top!r} per file")
    return document[top]


def _version(path: Path, entry: str, data: Mapping[str, Any]) -> None:
    version = data.get("version")
    text = f"{version:.1f}" if isinstance(version, float) else str(version)
    if text not in VERSIONS:
        raise _fail(path, f"{entry}.version", f"{version!r}: dsasim reads Timeloop's v{' / v'.join(VERSIONS)} format")


def _keys(path: Path, entry: str, data: Any, allowed: Sequence[str], required: Sequence[str] = ()) -> None:
    if not isinstance(data, dict):
        raise _fail(path, entry, f"must be a mapping with keys {list(allowed)}, got {data!r}")
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise _fail(path, entry, f"unknown key(s) {unknown}; dsasim reads {list(allowed)}")
    missing = [k for k in required if k not in data]
    if missing:
        raise _fail(path, entry, f"missing {missing}")


def _positive_int(path: Path, entry: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(path, entry, f"must be a whole number >= 1, got {value!r}")
    return value


# -- problem ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Projection:
    """One axis of a data space: its terms, each (dimension, coefficient value)."""

    terms: tuple[tuple[str, int], ...]


def _read_problem(path: Path) -> tuple[Problem, dict[str, str], dict[str, str], dict[str, Any]]:
    """(dsasim problem, Timeloop dimension -> dsasim dimension, Timeloop data space -> dsasim tensor, the raw shape
    facts the writer and the rules need)."""
    problem = _load(path, "problem")
    _keys(path, "problem", problem, ("version", "shape", "instance"), ("version", "shape", "instance"))
    _version(path, "problem", problem)
    shape, instance = problem["shape"], problem["instance"]
    _keys(path, "problem.shape", shape, ("name", "dimensions", "coefficients", "data_spaces", "data-spaces"),
          ("dimensions",))
    dims = shape["dimensions"]
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims) or \
            len(set(dims)) != len(dims):
        raise _fail(path, "problem.shape.dimensions", f"must be a list of distinct names, got {dims!r}")
    if not isinstance(instance, dict):
        raise _fail(path, "problem.instance", f"must be a mapping of dimension sizes, got {instance!r}")
    coefficients: dict[str, int] = {}
    for i, c in enumerate(shape.get("coefficients") or ()):
        _keys(path, f"problem.shape.coefficients[{i}]", c, ("name", "default"), ("name",))
        coefficients[c["name"]] = _positive_int(path, f"problem.shape.coefficients[{i}].default", c.get("default", 1))
    extents: dict[str, int] = {}
    for key, value in instance.items():
        if key in dims:
            extents[key] = _positive_int(path, f"problem.instance.{key}", value)
        elif key in coefficients:
            coefficients[key] = _positive_int(path, f"problem.instance.{key}", value)
        else:
            raise _fail(path, f"problem.instance.{key}", f"not a dimension {dims} or coefficient "
                                                         f"{sorted(coefficients)} of the shape")
    missing = [d for d in dims if d not in extents]
    if missing:
        raise _fail(path, "problem.instance", f"no size for dimension(s) {missing}")
    spaces_raw = shape.get("data_spaces", shape.get("data-spaces"))
    if not isinstance(spaces_raw, list) or len(spaces_raw) != 3:
        raise _fail(path, "problem.shape.data_spaces", "dsasim reads problems of three data spaces (two inputs, one "
                                                       f"read_write output: a conv or a matmul), got {spaces_raw!r}")
    spaces: dict[str, tuple[_Projection, ...]] = {}
    output = None
    for i, space in enumerate(spaces_raw):
        entry = f"problem.shape.data_spaces[{i}]"
        _keys(path, entry, space, ("name", "projection", "read_write", "read-write"), ("name", "projection"))
        name = space["name"]
        if not isinstance(name, str) or name in spaces:
            raise _fail(path, f"{entry}.name", f"must be a new name, got {name!r}")
        if space.get("read_write", space.get("read-write", False)) is True:
            if output is not None:
                raise _fail(path, entry, f"a second read_write data space ({output!r} is the first): dsasim reads "
                                         f"one output")
            output = name
        axes = []
        for j, axis in enumerate(space["projection"] if isinstance(space["projection"], list) else [None]):
            where = f"{entry}.projection[{j}]"
            if not isinstance(axis, list) or not axis or len(axis) > 2:
                raise _fail(path, where, f"an axis is [[DIM]] or a window [[TAP, COEF], [POSITION, COEF]], got "
                                         f"{axis!r}; other projections are not modelled")
            terms = []
            for term in axis:
                if not isinstance(term, list) or not 1 <= len(term) <= 2 or term[0] not in dims:
                    raise _fail(path, where, f"a term is [DIM] or [DIM, COEFFICIENT] with DIM in {dims}, got "
                                             f"{term!r}")
                coef = 1
                if len(term) == 2:
                    if isinstance(term[1], str):
                        if term[1] not in coefficients:
                            raise _fail(path, where, f"coefficient {term[1]!r} is not declared in "
                                                     f"problem.shape.coefficients {sorted(coefficients)}")
                        coef = coefficients[term[1]]
                    else:
                        coef = _positive_int(path, where, term[1])
                terms.append((term[0], coef))
            if len(terms) == 1 and terms[0][1] != 1:
                raise _fail(path, where, f"a single-dimension axis with coefficient {terms[0][1]} is not modelled")
            axes.append(_Projection(tuple(terms)))
        spaces[name] = tuple(axes)
    if output is None:
        raise _fail(path, "problem.shape.data_spaces", "no data space has read_write: True (the output)")
    inputs = [n for n in spaces if n != output]

    def plain(name: str) -> set[str]:
        return {p.terms[0][0] for p in spaces[name] if len(p.terms) == 1}

    out_dims = plain(output)
    windows = {n: [p for p in spaces[n] if len(p.terms) == 2] for n in spaces}
    if windows[output]:
        raise _fail(path, f"problem.shape.data_spaces ({output})", "the output has a window axis; not modelled")
    used = [d for n in spaces for p in spaces[n] for d, _ in p.terms]
    unused = [d for d in dims if d not in used]
    if unused:
        raise _fail(path, "problem.shape.dimensions", f"{unused} index no data space")
    names: dict[str, str] = {}
    facts: dict[str, Any] = {"name": shape.get("name"), "output": output}
    imaged = [n for n in inputs if windows[n]]
    if imaged:  # a conv
        if len(imaged) != 1:
            raise _fail(path, "problem.shape.data_spaces", f"both inputs {inputs} have window axes: not a conv")
        image, = imaged
        weight, = (n for n in inputs if n != image)
        wins = windows[image]
        if len(wins) > 2:
            raise _fail(path, f"problem.shape.data_spaces ({image})", f"{len(wins)} window axes: dsasim convs have "
                                                                       f"two (width, height)")
        geometry = {}
        for axis, (pos_name, tap_name) in zip(wins, (("ow", "kw"), ("oh", "kh"))):
            (d1, c1), (d2, c2) = axis.terms
            if d1 in out_dims and d2 in plain(weight):
                (pos, stride), (tap, dilation) = (d1, c1), (d2, c2)
            elif d2 in out_dims and d1 in plain(weight):
                (pos, stride), (tap, dilation) = (d2, c2), (d1, c1)
            else:
                raise _fail(path, f"problem.shape.data_spaces ({image})", f"window [{d1}, {d2}] is not an output "
                                                                           f"position plus a kernel tap")
            names[pos], names[tap] = pos_name, tap_name
            geometry[pos_name] = (extents[pos], stride)
            geometry[tap_name] = (extents[tap], dilation)
        roles = (("n", plain(image) & out_dims - plain(weight)), ("ic", plain(image) & plain(weight) - out_dims),
                 ("oc", plain(weight) & out_dims - plain(image)))
        for role, found in roles:
            if len(found) > 1:
                raise _fail(path, "problem.shape", f"dimensions {sorted(found)} all play {role!r}; dsasim reads one "
                                                   f"per role (a conv: N, C, M, R, S, P, Q)")
            if found:
                names[found.pop()] = role
        unplaced = [d for d in dims if d not in names]
        if unplaced:
            raise _fail(path, "problem.shape", f"dimension(s) {unplaced} fit no role of a conv (batch: image and "
                                               f"output; input channels: image and weight; output channels: weight "
                                               f"and output); grouped and depthwise convs are not read yet")
        size = {d: extents[t] for t, d in names.items()}
        ow, sw = geometry["ow"]
        kw, dw = geometry["kw"]
        oh, sh = geometry.get("oh", (1, 1))
        kh, dh = geometry.get("kh", (1, 1))
        conv = ConvProblem(size.get("n", 1), size.get("ic", 1), size.get("oc", 1), (oh - 1) * sh + (kh - 1) * dh + 1,
                           (ow - 1) * sw + (kw - 1) * dw + 1, kh, kw, stride=(sh, sw), padding=0,
                           dilation=(dh, dw), name=facts["name"] if isinstance(facts["name"], str) else None)
        return conv, names, {image: "image", weight: "weight", output: "output"}, facts
    a, b = inputs
    roles = (("m", plain(a) & out_dims - plain(b)), ("k", plain(a) & plain(b) - out_dims),
             ("n", plain(b) & out_dims - plain(a)))
    for role, found in roles:
        if len(found) != 1:
            raise _fail(path, "problem.shape", f"not a matmul (Z[M,N] = A[M,K] B[K,N]) nor a conv: {len(found)} "
                                               f"dimension(s) play {role!r}; unknown problem shape")
        names[found.pop()] = role
    size = {d: extents[t] for t, d in names.items()}
    matmul = MatmulProblem(size["m"], size["n"], size["k"],
                           name=facts["name"] if isinstance(facts["name"], str) else None)
    return matmul, names, {a: "a", b: "b", output: "c"}, facts


# -- architecture -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeloopLevel:
    """A storage level of a Timeloop architecture: its name, words (None: unbounded), word and row widths in bits,
    and its read and write bandwidths in words per cycle (None: not given)."""

    name: str
    depth_words: int | None
    word_bits: int
    width_bits: int
    read_bandwidth: float | None
    write_bandwidth: float | None

    def __post_init__(self) -> None:
        if self.word_bits % 8 or self.width_bits % self.word_bits:
            raise ValueError(f"Timeloop level {self.name}: datawidth {self.word_bits} bits must be whole bytes and "
                             f"divide width {self.width_bits}")

    @property
    def capacity_bytes(self) -> int | None:
        """Bytes the level holds (depth x width / 8); None for an unbounded backing store."""
        return None if self.depth_words is None else self.depth_words * self.width_bits // 8


def _read_arch(path: Path) -> tuple[tuple[TimeloopLevel, ...], str, float | None, list[str]]:
    """(storage levels outermost first, the arithmetic component's name, clock in Hz or None, notes)."""
    arch = _load(path, "architecture")
    _keys(path, "architecture", arch, ("version", "nodes"), ("version", "nodes"))
    _version(path, "architecture", arch)
    nodes = arch["nodes"]
    if not isinstance(nodes, list) or not nodes:
        raise _fail(path, "architecture.nodes", "must be a list of !Container and !Component nodes")
    levels: list[TimeloopLevel] = []
    compute: str | None = None
    clock_hz: float | None = None
    notes: list[str] = []
    for i, node in enumerate(nodes):
        tag = node.get("__tag__") if isinstance(node, dict) else None
        entry = f"architecture.nodes[{i}]"
        if tag not in NODE_KEYS:
            raise _fail(path, entry, f"must be a !Component or a !Container, got {node!r}")
        body = {k: v for k, v in node.items() if k != "__tag__"}
        _keys(path, f"{entry} (!{tag})", body, NODE_KEYS[tag], ("name",))
        name = body["name"]
        entry = f"architecture.nodes[{i}] ({name})"
        if compute is not None:
            raise _fail(path, entry, f"a node below the arithmetic component {compute!r}")
        spatial = body.get("spatial") or {}
        if isinstance(spatial, dict) and isinstance(body.get("attributes"), dict):  # v0.3's meshX in attributes
            spatial = {**spatial, **{k: v for k, v in body["attributes"].items() if k in ("meshX", "meshY")}}
        if not isinstance(spatial, dict) or any(v != 1 for v in spatial.values()):
            raise _fail(path, f"{entry}.spatial", f"{spatial!r}: spatial fan-out is not modelled (dsasim models one "
                                                  f"PE); give meshX/meshY 1 or leave it out")
        attributes = body.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise _fail(path, f"{entry}.attributes", f"must be a mapping, got {attributes!r}")
        if "global_cycle_seconds" in attributes:
            seconds = attributes["global_cycle_seconds"]
            try:
                seconds = float(seconds)
            except (TypeError, ValueError):
                seconds = -1.0
            if not (seconds > 0 and math.isfinite(seconds)):
                given = attributes["global_cycle_seconds"]
                raise _fail(path, f"{entry}.attributes.global_cycle_seconds", f"must be a positive number of "
                                                                             f"seconds, got {given!r}")
            clock_hz = float(f"{1.0 / seconds:.12g}")  # 1e-9 s -> 1 GHz exactly, not 999999999.9999999
        if tag == "Container":
            unknown = sorted(k for k in attributes if k not in ENERGY_ATTRIBUTES)
            if unknown:
                raise _fail(path, f"{entry}.attributes", f"unknown key(s) {unknown}; dsasim reads "
                                                         f"{list(ENERGY_ATTRIBUTES)} of a container")
            continue
        klass = body.get("class")
        if not isinstance(klass, str):
            raise _fail(path, f"{entry}.class", f"must be a class name, got {klass!r}")
        unknown = sorted(k for k in attributes if k not in STORAGE_ATTRIBUTES + ENERGY_ATTRIBUTES + ("width",))
        if unknown:
            raise _fail(path, f"{entry}.attributes", f"unknown key(s) {unknown}; dsasim reads "
                                                     f"{list(STORAGE_ATTRIBUTES)} (the rest: "
                                                     f"{list(ENERGY_ATTRIBUTES)}, priced by Accelergy)")
        if klass.lower() in COMPUTE_CLASSES:
            compute = name
            continue
        word_bits = _positive_int(path, f"{entry}.attributes.datawidth", attributes.get("datawidth", 8))
        width_bits = _positive_int(path, f"{entry}.attributes.width", attributes.get(
            "width", word_bits * attributes.get("block_size", 1)))
        depth = attributes.get("depth")
        if depth is not None:
            depth = _positive_int(path, f"{entry}.attributes.depth", depth)
        bandwidths = []
        for key in ("read_bandwidth", "write_bandwidth"):
            value = attributes.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or
                                      not value > 0 or not math.isfinite(value)):
                raise _fail(path, f"{entry}.attributes.{key}", f"must be a positive number of words per cycle, "
                                                               f"got {value!r}")
            bandwidths.append(value)
        try:
            levels.append(TimeloopLevel(name, depth, word_bits, width_bits, *bandwidths))
        except ValueError as err:
            raise _fail(path, f"{entry}.attributes", str(err)) from None
    if compute is None:
        raise _fail(path, "architecture.nodes", f"no arithmetic component (class one of {list(COMPUTE_CLASSES)}) "
                                                f"as its last node")
    if len(levels) not in (2, 3):
        raise _fail(path, "architecture.nodes", f"{len(levels)} storage level(s) {[lv.name for lv in levels]}: dsasim "
                                                f"reads two or three (a backing store, the SRAM, one level below it)")
    if len({lv.word_bits for lv in levels}) != 1:
        raise _fail(path, "architecture.nodes", f"datawidths {[lv.word_bits for lv in levels]} differ: dsasim has one "
                                                f"word size")
    for level in levels[1:]:
        if level.depth_words is None:
            raise _fail(path, f"architecture ({level.name})", "a buffer needs a depth (its capacity)")
        if level.name in (DDR, SRAM_LEVEL):
            raise _fail(path, f"architecture ({level.name})", f"dsasim reserves the names {DDR} and {SRAM_LEVEL}; "
                                                              f"rename the buffer")
    for key in ("read_bandwidth", "write_bandwidth"):
        if getattr(levels[1], key) is not None:
            notes.append(f"{levels[1].name} {key} {getattr(levels[1], key):g} words/cycle: dsasim's SRAM has no "
                         f"bandwidth limit; it does not change a count")
    if levels[0].write_bandwidth is not None and levels[0].write_bandwidth != levels[0].read_bandwidth:
        notes.append(f"{levels[0].name} write_bandwidth: dsasim's DDR port has one bandwidth (read_bandwidth is "
                     f"used); it does not change a count")
    return tuple(levels), compute, clock_hz, notes


def _hardware(levels: Sequence[TimeloopLevel], clock_hz: float | None, name: str,
              inner_roles: Sequence[str] = ()) -> Accelerator:
    """The architecture as a dsasim accelerator: the backing store as DDR, the next level as the SRAM, a third
    (if any) as a level below the SRAM holding the operand roles `inner_roles` (its `read_bandwidth`, words per
    cycle, its port; none given: the widest port dsasim takes), one MAC as a 1 x 1 TensorCore with no local reuse
    (one MAC per step that reads both operands and read-modify-writes its partial sum in the innermost level
    holding it, as Timeloop's arithmetic unit, which holds nothing)."""
    outer, inner = levels[:2]
    word_bytes = inner.word_bits // 8
    fields: dict[str, Any] = {"name": name, "sram_bytes": inner.capacity_bytes, "word_bytes": word_bytes,
                              "tensorcore_in_channels": 1, "tensorcore_out_channels": 1,
                              "tensorcore_dataflow": "no_local_reuse"}
    if clock_hz is not None:
        fields["clock_hz"] = clock_hz
    if outer.read_bandwidth is not None:
        fields["dram_bytes_per_cycle"] = outer.read_bandwidth * word_bytes
    if len(levels) == 3:
        low = levels[2]
        bandwidth = float(1 << 20) if low.read_bandwidth is None else low.read_bandwidth * word_bytes
        fields["inner_levels"] = (MemoryLevel(low.name, low.capacity_bytes, bandwidth, tuple(inner_roles),
                                              access_bytes=low.width_bits // 8),)
    return dataclasses.replace(load_hardware("blog"), **fields)


# -- mapping ------------------------------------------------------------------------------------------------------
def _factors(path: Path, entry: str, text: Any, dims: Sequence[str]) -> dict[str, int]:
    items = text.split() if isinstance(text, str) else text
    if not isinstance(items, list):
        raise _fail(path, entry, f"factors must be 'R=3 P=16' or a list of 'DIM=N', got {text!r}")
    out: dict[str, int] = {}
    for item in items:
        dim, eq, value = str(item).partition("=")
        if not eq or dim not in dims or dim in out:
            raise _fail(path, entry, f"factor {item!r}: expected DIM=N once per dimension, DIM in {list(dims)}")
        try:
            out[dim] = int(value)
        except ValueError:
            raise _fail(path, entry, f"factor {item!r}: N must be a whole number") from None
        if out[dim] < 1:
            raise _fail(path, entry, f"factor {item!r}: N must be >= 1 (0, Timeloop's mapper's 'any', is not read)")
    return out


def _permutation(path: Path, entry: str, text: Any, dims: Sequence[str]) -> list[str]:
    if isinstance(text, str):
        items = text.split() if " " in text.strip() else list(text.strip()) if all(len(d) == 1 for d in dims) \
            else [text]
    elif isinstance(text, list):
        items = [str(t) for t in text]
    else:
        raise _fail(path, entry, f"permutation must be a string like 'PRK' (innermost first), got {text!r}")
    bad = [d for d in items if d not in dims]
    if bad or len(set(items)) != len(items):
        raise _fail(path, entry, f"permutation {text!r}: every item once, from {list(dims)}")
    return items


def _read_mapping(path: Path, levels: Sequence[TimeloopLevel], dims: Sequence[str]
                  ) -> tuple[dict[str, dict[str, int]], dict[str, list[str]], dict[str, tuple[list[str], list[str]]]]:
    """(level -> factors, level -> permutation innermost first, level -> (kept, bypassed) data spaces)."""
    mapping = _load(path, "mapping")
    if isinstance(mapping, dict) and "version" in mapping:  # the nested form {version, mapping: [...]}
        raise _fail(path, "mapping", "give the mapping as a list of entries (Timeloop's v0.4 form)")
    if not isinstance(mapping, list) or not mapping:
        raise _fail(path, "mapping", "must be a list of entries (target, type, factors, permutation)")
    names = [lv.name for lv in levels]
    factors: dict[str, dict[str, int]] = {}
    perms: dict[str, list[str]] = {}
    keeps: dict[str, tuple[list[str], list[str]]] = {}
    for i, item in enumerate(mapping):
        entry = f"mapping[{i}]"
        kind = item.get("type", "temporal") if isinstance(item, dict) else None
        if kind not in MAPPING_KEYS:
            raise _fail(path, entry, f"type {kind!r}: dsasim reads {list(MAPPING_KEYS)}")
        _keys(path, entry, item, MAPPING_KEYS[kind], ("target",))
        target = item["target"]
        entry = f"mapping[{i}] ({target}, {kind})"
        if target not in names:
            raise _fail(path, entry, f"target {target!r} is not a storage level of the architecture {names}")
        if kind == "dataspace":
            keep, bypass = item.get("keep") or [], item.get("bypass") or []
            keeps[target] = (list(keep), list(bypass))
            continue
        got = _factors(path, f"{entry}.factors", item.get("factors", ""), dims)
        if kind == "spatial":
            if any(f > 1 for f in got.values()):
                raise _fail(path, entry, f"spatial factors {got} are not modelled (dsasim models one PE); map them "
                                         f"temporally")
            continue
        if target in factors:
            raise _fail(path, entry, f"a second temporal entry for {target}")
        factors[target] = got
        perms[target] = _permutation(path, f"{entry}.permutation", item.get("permutation", ""), dims)
    return factors, perms, keeps


# -- the whole input ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeloopInput:
    """Three Timeloop files read: the dsasim nest and hardware they describe, the names that map them (Timeloop
    dimension -> dsasim dimension, data space -> tensor, storage levels outermost first, the arithmetic unit) and
    notes on what dsasim reads differently but that changes no count."""

    nest: LoopNest | LevelNest
    hardware: Accelerator
    dimension_names: Mapping[str, str]
    tensor_names: Mapping[str, str]
    levels: tuple[TimeloopLevel, ...]
    compute: str
    notes: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.levels) != (3 if isinstance(self.nest, LevelNest) else 2):
            raise ValueError(f"TimeloopInput: a LoopNest takes two storage levels, a LevelNest three; got "
                             f"{len(self.levels)} for a {type(self.nest).__name__}")

    @property
    def outer(self) -> LoopNest:
        """The DDR -> SRAM loop nest (the whole nest on two levels)."""
        return self.nest.outer if isinstance(self.nest, LevelNest) else self.nest

    @property
    def dsasim_levels(self) -> tuple[str, ...]:
        """dsasim's name of each storage level, outermost first (DDR, SRAM, the inner level's own name)."""
        return (DDR, SRAM_LEVEL, *(lv.name for lv in self.levels[2:]))

    def on(self, hardware: Accelerator) -> "TimeloopInput":
        """The same input on other hardware of the same levels (priced by Accelergy, say)."""
        nest = LevelNest(self.nest.outer, self.nest.inner, hardware) if isinstance(self.nest, LevelNest) \
            else self.nest
        return dataclasses.replace(self, nest=nest, hardware=hardware)


def read_timeloop(problem_path: str | Path, arch_path: str | Path, mapping_path: str | Path) -> TimeloopInput:
    """Three Timeloop v0.4 files as a dsasim nest on hardware (module docstring); TimeloopFormatError (one line: the
    file, the entry, what is wrong) for anything outside the subset read."""
    problem_path, arch_path, mapping_path = Path(problem_path), Path(arch_path), Path(mapping_path)
    problem, dim_names, tensor_names, _facts = _read_problem(problem_path)
    levels, compute, clock_hz, notes = _read_arch(arch_path)
    tl_dims = list(dim_names)
    factors, perms, keeps = _read_mapping(mapping_path, levels, tl_dims)
    names = [lv.name for lv in levels]
    inner_spaces = list(tensor_names)
    for level, (keep, bypass) in keeps.items():
        entry = f"mapping (dataspace of {level})"
        for space in (*keep, *bypass):
            if space not in tensor_names:
                raise _fail(mapping_path, entry, f"{space!r} is not a data space of the problem {list(tensor_names)}")
        if bypass and level != names[-1] or bypass and len(levels) == 2:
            where = "the backing store holds every tensor" if level == names[0] else \
                "dsasim's SRAM holds every tensor" if len(levels) == 3 else \
                "dsasim's MAC reads its operands from the buffer"
            raise _fail(mapping_path, entry, f"bypass {bypass} at {level} is not modelled ({where})")
        if bypass:
            inner_spaces = [t for t in tensor_names if t not in bypass]
    extents = {t: problem.extents[d] for t, d in dim_names.items()}
    for d in tl_dims:
        parts = [factors.get(level, {}).get(d, 1) for level in names]
        if math.prod(parts) != extents[d]:
            raise _fail(mapping_path, f"factors of {d}", f"{' x '.join(names)} = {' x '.join(map(str, parts))} = "
                                                          f"{math.prod(parts)}, but the problem's {d} is {extents[d]}; "
                                                          f"the factors of a dimension must multiply to its size")
    orders = []
    for level in names[:-1]:  # the innermost level's loops are the tile the MAC runs: their order changes no count
        perm = perms.get(level, [])
        missing = [d for d in tl_dims if factors.get(level, {}).get(d, 1) > 1 and d not in perm]
        if missing:
            raise _fail(mapping_path, f"mapping ({level}).permutation", f"misses {missing}, which loop more than "
                                                                        f"once there; name every such dimension")
        # the level's loops, outermost first (Timeloop lists innermost first), then the one-trip rest
        order_tl = list(reversed(perm)) + [d for d in tl_dims if d not in perm]
        orders.append([dim_names[d] for d in order_tl] + [d for d in problem.dims if d not in dim_names.values()])
    below = {dim_names[d]: math.prod(factors.get(level, {}).get(d, 1) for level in names[1:]) for d in tl_dims}
    outer_nest = _timeloop_nest(problem, orders[0], below)
    name = f"timeloop-{arch_path.stem}"
    if len(levels) == 2:
        return TimeloopInput(outer_nest, _hardware(levels, clock_hz, name), dict(dim_names), dict(tensor_names),
                             levels, compute, tuple(notes))
    held = [tensor_names[t] for t in inner_spaces]
    hardware = _hardware(levels, clock_hz, name, [tensor_role(problem, t) for t in held])
    tiles = {dim_names[d]: factors.get(names[2], {}).get(d, 1) for d in tl_dims}
    stage: dict[str, int | str] = {}
    for t in held:  # just inside the innermost inner loop with more than one trip that indexes it, else where the
        spec = problem.tensor(t)  # SRAM holds it (it stays in the level across the outer loops below that)
        relevant = [k for k, d in enumerate(orders[1]) if d in spec.dims and
                    tile_count(outer_nest.tile(d), tiles.get(d, outer_nest.tile(d))) > 1]
        stage[t] = relevant[-1] + 1 if relevant else f"outer:{outer_nest.loop_of(t)}"
    try:
        nest = LevelNest(outer_nest, InnerTiling(orders[1], tiles, stage), hardware)
    except ValueError as err:
        raise _fail(mapping_path, f"mapping ({names[2]})", str(err)) from None
    return TimeloopInput(nest, hardware, dict(dim_names), dict(tensor_names), levels, compute, tuple(notes))


def _timeloop_nest(problem: Problem, order: Sequence[str], tiles: Mapping[str, int]) -> LoopNest:
    """The nest Timeloop runs for loops `order` (outermost first) and buffer tiles `tiles`: each tensor staged just
    inside the innermost loop with more than one trip that indexes it; an input slides where that loop is one of its
    output-position loops."""
    probe = LoopNest(problem, order, tiles, {t: 0 for t in problem.tensor_names})
    stage: dict[str, int] = {}
    slide = []
    for spec in problem.tensors:
        relevant = [k for k, d in enumerate(order) if d in spec.dims and probe.trips(d) > 1]
        stage[spec.name] = relevant[-1] + 1 if relevant else 0
        if relevant and not spec.output and order[relevant[-1]] in {a.dim for a in spec.axes if a.is_window}:
            slide.append(spec.name)
    return LoopNest(problem, order, tiles, stage, slide=slide)


# -- counts in Timeloop's terms -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeloopCount:
    """One data space at one level: dsasim's bytes read and written there, and Timeloop's scalar reads, fills and
    updates derived from them (words)."""

    level: str
    data_space: str
    tensor: str
    dsasim_read_bytes: int
    dsasim_write_bytes: int
    reads: int
    fills: int
    updates: int

    def __post_init__(self) -> None:
        for name in ("dsasim_read_bytes", "dsasim_write_bytes", "reads", "fills", "updates"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"TimeloopCount {self.level}/{self.data_space}: {name} must be an integer >= 0, "
                                 f"got {value!r}")


def timeloop_counts(spec: TimeloopInput, counts: Any) -> tuple[TimeloopCount, ...]:
    """dsasim's access counts of the run (`AccessCounts`, bytes per tensor at DDR and SRAM) in Timeloop's terms, per
    level (outermost first) and data space (module docstring: the rules)."""
    word = spec.hardware.word_bytes
    got = {(t.tensor, t.level): (int(t.read_bytes), int(t.write_bytes)) for t in counts.tensors}
    rows = []
    for space, tensor in spec.tensor_names.items():
        is_output = spec.nest.problem.tensor(tensor).output
        path = [(lv, name) for lv, name in zip(spec.levels, spec.dsasim_levels) if (tensor, name) in got]
        # top down along the tensor's path (the module docstring's terms): a level's fills are what its parent read
        # for it, less the parent's own drain; an output level's drain (what it writes back to its parent: the
        # parent's updates) is a read Timeloop does not count; its updates are its writes less its fills
        reads = fills = updates = drained = parent_read = parent_drained = 0
        for k, (level, name) in enumerate(path):
            read, write = got[(tensor, name)]
            if k == 0:  # the backing store: loads read it, stores update it
                reads, fills, updates, drained = read, 0, write, 0
            elif not is_output:  # loads fill it, the level below (or the MAC) reads it
                reads, fills, updates = read, write, 0
            else:
                fills = parent_read - parent_drained
                drained = updates  # the parent's updates are this level's write-backs
                reads, updates = read - drained, write - fills
            rows.append(TimeloopCount(level.name, space, tensor, read, write, reads // word, fills // word,
                                      updates // word))
            parent_read, parent_drained = read, drained
    order = {lv.name: i for i, lv in enumerate(spec.levels)}
    return tuple(sorted(rows, key=lambda r: (-order[r.level], list(spec.tensor_names).index(r.data_space))))


def rule_differences(spec: TimeloopInput) -> tuple[str, ...]:
    """Where Timeloop counts this nest differently from dsasim, one line per rule that applies (empty: none)."""
    nest, problem = spec.outer, spec.nest.problem
    outer, inner = (lv.name for lv in spec.levels[:2])
    back = {v: k for k, v in spec.dimension_names.items()}
    space = {v: k for k, v in spec.tensor_names.items()}
    lines = []
    if isinstance(spec.nest, LevelNest):  # no sliding below the SRAM in dsasim
        low, levels = spec.levels[2].name, spec.nest
        for t, level in levels.levels.items():
            if levels.inner_depth[t] is None or problem.tensor(t).output:
                continue
            seen_tiles, _ = levels.seen(t)
            relevant = [d for d in levels.inner_above(t) if d in problem.tensor(t).dims and
                        levels.inner_trips(d) > 1]
            positions = {a.dim for a in problem.tensor(t).axes if a.is_window}
            if relevant and relevant[-1] in positions:
                lines.append(f"sliding-window reuse below the SRAM: the innermost {inner} loop indexing "
                             f"{space[t]} is the output position {back.get(relevant[-1], relevant[-1])}; Timeloop "
                             f"keeps the overlap of consecutive {space[t]} tiles in {low}, dsasim's levels below the "
                             f"SRAM do not slide and reload each tile, so its {low} fills and {inner} reads of "
                             f"{space[t]} are higher")
    for t in problem.tensors:
        relevant = [d for d in nest.above(t.name) if nest.trips(d) > 1]
        taps = {a.tap for a in t.axes if a.is_window}
        if relevant and relevant[-1] in taps:
            lines.append(f"sliding-window reuse along a kernel-tap loop: the innermost {outer} loop indexing "
                         f"{space[t.name]} is the tap {back.get(relevant[-1], relevant[-1])}; Timeloop keeps the "
                         f"overlap of consecutive {space[t.name]} tiles along it, dsasim slides only along output "
                         f"positions and reloads each tile, so its {inner} fills and {outer} reads of "
                         f"{space[t.name]} are higher")
        if t.output:
            lines.append(f"the drain read: dsasim's write-back of each finished {space[t.name]} element to the "
                         f"level above reads it; Timeloop does not count that read, so its reads of "
                         f"{space[t.name]} at {' and '.join(lv.name for lv in spec.levels[1:])} are dsasim's less the "
                         f"updates of the level above")
        if not t.output and not nest.slides(t.name) and any(a.is_window for a in t.axes):
            for a in t.axes:
                if a.is_window and window_step(nest.tile(a.dim), nest.tile(a.tap), a.stride, a.dilation) > 1:
                    lines.append(f"a strided window along {back.get(a.dim, a.dim)}: dsasim loads only the rows its "
                                 f"tile reads; Timeloop counts the bounding box of {space[t.name]}'s tile, gaps "
                                 f"included")
                    break
    return tuple(lines)


def timeloop_hardware_priced(spec: TimeloopInput, ert_path: str | Path, art_path: str | Path | None) -> Accelerator:
    """The input's hardware priced by an Accelergy ERT (and ART) summary: the backing store's component as DDR, the
    next as the SRAM, a third as the level below it (each access its width), the arithmetic unit's as the
    TensorCore's MAC; ValueError naming the file for a table that lacks one of them."""
    from dsasim.energy.accelergy import read_accelergy
    from dsasim.energy.accelergy_map import AccelergyBinding, accelergy_energies, with_accelergy

    tables = read_accelergy(ert_path, art_path)
    bindings = tuple(AccelergyBinding(name, level.name, level.width_bits // 8)
                     for name, level in zip(spec.dsasim_levels, spec.levels)) + \
        (AccelergyBinding("tensorcore", spec.compute),)
    return with_accelergy(spec.hardware, accelergy_energies(tables, bindings, spec.hardware))


# -- out ----------------------------------------------------------------------------------------------------------
CONV_NAMES = {"n": "N", "ic": "C", "oc": "M", "oh": "Q", "ow": "P", "kh": "S", "kw": "R"}
MATMUL_NAMES = {"m": "M", "n": "N", "k": "K"}
SPACE_NAMES = {"image": "Inputs", "weight": "Weights", "output": "Outputs", "a": "A", "b": "B", "c": "Z"}


def check_exportable(problem: Problem, hardware: Accelerator) -> None:
    """ValueError unless some nest of `problem` on `hardware` can be written as Timeloop files (checked before a
    search): an ungrouped conv without padding or a matmul, on hardware without levels below the SRAM."""
    if hardware.inner_levels:
        raise ValueError(f"{hardware.name} has levels below the SRAM: --timeloop writes two-level hardware only")
    if isinstance(problem, ConvProblem):
        if problem.padding != (0, 0):
            raise ValueError(f"{problem.name} has padding {problem.padding}: Timeloop's problems have none (its input "
                             f"would be counted larger); --timeloop takes layers without padding")
        if problem.groups > 1:
            raise ValueError(f"{problem.name} is grouped: --timeloop writes ungrouped convs and matmuls only")
    elif not isinstance(problem, MatmulProblem):
        raise ValueError(f"--timeloop writes convs and matmuls, not {problem.kind}")


def _expressible(nest: LoopNest, hardware: Accelerator) -> None:
    """ValueError unless Timeloop can run `nest` as dsasim does (the reason and the fix)."""
    problem = nest.problem
    check_exportable(problem, hardware)
    for d in problem.dims:
        if problem.extents[d] % nest.tile(d):
            raise ValueError(f"the best nest tiles {d} by {nest.tile(d)}, which does not divide {problem.extents[d]}: "
                             f"Timeloop's factors must divide (no ragged last tile)")
    timeloop = _timeloop_nest(problem, nest.order, nest.tile_map)
    for t in problem.tensor_names:
        if timeloop.depth(t) != nest.depth(t):
            raise ValueError(f"the best nest stages {t} inside {nest.loop_of(t)}; Timeloop keeps it inside "
                             f"{timeloop.loop_of(t)} (the innermost loop indexing it): a different schedule, so "
                             f"nothing is written")
        if timeloop.slides(t) != nest.slides(t):
            raise ValueError(f"the best nest {'slides' if nest.slides(t) else 'does not slide'} {t}; Timeloop "
                             f"{'slides' if timeloop.slides(t) else 'does not slide'} it: a different schedule, so "
                             f"nothing is written (search without --no-slide)")


def timeloop_files(nest: LoopNest, hardware: Accelerator) -> dict[str, str]:
    """`nest` on `hardware` as Timeloop v0.4 problem, architecture and mapping YAML (file kind -> text, keys of
    FILE_NAMES); ValueError when Timeloop cannot express the nest as dsasim runs it, or the hardware has levels
    below the SRAM."""
    _expressible(nest, hardware)
    problem = nest.problem
    conv = isinstance(problem, ConvProblem)
    names = CONV_NAMES if conv else MATMUL_NAMES
    dims = [d for d in problem.dims if d in names]
    lines = ["problem:", "  version: 0.4", "  shape:", f"    name: {'CNN_Layer' if conv else 'Matmul'}",
             f"    dimensions: [ {', '.join(names[d] for d in dims)} ]"]
    if conv:
        lines += ["    coefficients:"] + [f"    - name: {c}\n      default: 1"
                                          for c in ("Wstride", "Hstride", "Wdilation", "Hdilation")]
        spaces = (("Weights", "[ [C] ], [ [M] ], [ [R] ], [ [S] ]", False),
                  ("Inputs", "[ [N] ], [ [C] ], [ [R, Wdilation], [P, Wstride] ], [ [S, Hdilation], [Q, Hstride] ]",
                   False),
                  ("Outputs", "[ [N] ], [ [M] ], [ [Q] ], [ [P] ]", True))
    else:
        spaces = (("A", "[ [M] ], [ [K] ]", False), ("B", "[ [K] ], [ [N] ]", False),
                  ("Z", "[ [M] ], [ [N] ]", True))
    lines.append("    data_spaces:")
    for name, projection, rw in spaces:
        lines += [f"    - name: {name}", f"      projection: [ {projection} ]"] + (["      read_write: True"] if rw
                                                                                     else [])
    lines.append("  instance:")
    lines += [f"    {names[d]}: {problem.extents[d]}" for d in dims]
    if conv:
        (sh, sw), (dh, dw) = problem.stride, problem.dilation
        lines += [f"    Wstride: {sw}", f"    Hstride: {sh}", f"    Wdilation: {dw}", f"    Hdilation: {dh}"]
    word_bits = 8 * hardware.word_bytes
    arch = ["architecture:", "  version: 0.4", "  nodes:", "  - !Container", "    name: System", "    attributes:",
            f"      global_cycle_seconds: {1 / hardware.clock_hz:.9e}",
            "  - !Component", "    name: MainMemory", "    class: DRAM", "    attributes:",
            f"      width: {word_bits}", f"      datawidth: {word_bits}",
            f"      read_bandwidth: {hardware.dram_bytes_per_cycle / hardware.word_bytes!r}",
            "  - !Component", "    name: Buffer", "    class: SRAM", "    attributes:",
            f"      depth: {hardware.sram_bytes // hardware.word_bytes}", f"      width: {word_bits}",
            f"      datawidth: {word_bits}",
            "  - !Component", "    name: MACC", "    class: intmac", "    attributes:", f"      width: {word_bits}"]
    order = [d for d in nest.order if d in names]
    outer = " ".join(f"{names[d]}={nest.trips(d)}" for d in dims)
    inner = " ".join(f"{names[d]}={nest.tile(d)}" for d in dims)
    mapping = ["mapping:", "  - target: MainMemory", "    type: temporal", f"    factors: {outer}",
               f"    permutation: {''.join(names[d] for d in reversed(order))}",
               "  - target: Buffer", "    type: temporal", f"    factors: {inner}",
               f"    permutation: {''.join(names[d] for d in reversed(order))}"]
    header = (f"# written by `dsasim search` for {problem.spec()} on {hardware.name} ({hardware.sram_bytes:,} B SRAM);"
              f" Timeloop v0.4\n")
    arch_note = (f"# MACC is one MAC, as Timeloop's: the MainMemory counts are dsasim's; the Buffer's reads are per "
                 f"MAC here, per\n# {hardware.tensorcore_in_channels} x {hardware.tensorcore_out_channels} block on "
                 f"{hardware.name}'s TensorCore ({hardware.tensorcore_dataflow})\n")
    return {"problem": header + "\n".join(lines) + "\n", "arch": header + arch_note + "\n".join(arch) + "\n",
            "mapping": header + "\n".join(mapping) + "\n"}
