"""ZigZag workloads: a layer of a ZigZag workload YAML read as a dsasim problem, and a dsasim problem written as one.

ZigZag (KULeuven-MICAS/zigzag; the format as read at commit 3d12a96, `docs/source/workload.rst`,
`zigzag/parser/workload_validator.py`, `zigzag/parser/workload_factory.py`, `zigzag/inputs/workload/*.yaml`)
describes a workload as a YAML list of layers, each with an `id`, an `operator_type`, an `equation` such as
`O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]`, `dimension_relations` such as `ix=2*ox+1*fx` (stride 2 on the
output column, dilation 1 on the kernel column), `loop_dims` / `loop_sizes`, `operand_precision` in bits, and
optionally `pr_loop_dims` / `pr_loop_sizes` / `padding` (the input extents and the (begin, end) padding of each
window dimension).

How a layer becomes a dsasim problem (`read_layer`): each dimension's role comes from which operands it indexes,
not from its letter, so a file may name its dimensions and operands freely:

- with dimension relations, a **conv** (`ConvProblem`): the input operand indexed by the related dimensions is the
  image, the other the weight; in a relation `P = S*X + D*Y` the dimension that indexes the output is the output
  position (stride S) and the other the kernel tap (dilation D); the first output position in the output's indices
  is the rows, the second the columns (one relation: a 1-D conv, width 1). Of the other dimensions, one that indexes
  all three operands is the group (ZigZag's G: channels per group in K and C, as its ONNX parser writes them), one
  that indexes the output and the image the batch (several: their product), the output and the weight the output
  channels, the image and the weight the input channels; a depthwise conv has only the group.
- without, a **matmul** (`MatmulProblem`, c = a @ b): the input named W (else the second) is b; the dimensions
  that index the output and a are m (several: their product, e.g. ZigZag's batch and rows), the output and b n, a
  and b k.
- the input extent of a window is its `pr_loop_sizes` entry, else the smallest input the output needs
  (`S*(O-1) + D*(F-1) + 1` less the padding: ZigZag itself counts the distinct input indices there, fewer when the
  stride exceeds the kernel's reach, e.g. a 1x1 stride-2 conv; dsasim loads every stride-th row of the range, so
  the bytes are the same). Padding (begin, end) is modelled where padding both sides by `begin` gives the layer's
  output size (dsasim pads symmetrically; an unequal end pad that changes no output is the same layer).
- precisions: dsasim counts every tensor in the hardware's word; `ZigzagLayer.check_word` refuses an input or final
  output precision other than the word (one line naming the operand and the presets that fit). ZigZag's `O` (the
  partial sums') is read and reported, not modelled: dsasim keeps partial sums in words, as for every layer.

What dsasim does not model is refused in one line naming the file, the layer and what is wrong (`ValueError`):
pooling and element-wise layers (no multiply-accumulate), a batched matmul, a dimension that indexes only one
operand, a relation not of the form output position and tap, padding dsasim cannot reproduce, missing loop sizes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from dsasim.architect.nests.loopnest import ConvProblem, MatmulProblem, Problem
from dsasim.hardware import Accelerator
from dsasim.user_files import parse_yaml, read_text

__all__ = ["ZIGZAG_DIMS", "ZIGZAG_OPERANDS", "ZIGZAG_PREFIX", "ZigzagLayer", "is_zigzag_spec", "read_layer",
           "read_workload", "split_zigzag_spec", "workload_yaml"]

ZIGZAG_PREFIX = "zigzag:"
YAML_SUFFIXES = (".yaml", ".yml")
# the keys of a workload layer (ZigZag's WorkloadValidator.LAYER_SCHEMA); another key is refused, not ignored
LAYER_KEYS = ("id", "name", "operator_type", "equation", "dimension_relations", "loop_dims", "loop_sizes",
              "operand_precision", "operand_source", "pr_loop_dims", "pr_loop_sizes", "padding")
REQUIRED_KEYS = ("id", "operator_type", "equation", "loop_dims", "loop_sizes", "operand_precision")
# the operator types whose layer is a multiply-accumulate dsasim searches (ZigZag's validator allows also Pooling,
# Add, Max, MaxPool, AveragePool, GlobalAveragePool; its ONNX parser emits MatMul and QLinearConv)
MAC_OPERATORS = ("Conv", "Conv_downsample", "QLinearConv", "Gemm", "MatMul")
# dsasim's loop dimensions and tensors in ZigZag's letters (its ONNX parsers' conventions), for the writers
ZIGZAG_DIMS: dict[str, dict[str, str]] = {
    "conv": {"n": "B", "g": "G", "oc": "K", "ic": "C", "oh": "OY", "ow": "OX", "kh": "FY", "kw": "FX"},
    "matmul": {"m": "D", "k": "C", "n": "K"},
}
ZIGZAG_OPERANDS: dict[str, dict[str, str]] = {
    "conv": {"image": "I", "weight": "W", "output": "O"},
    "matmul": {"a": "I", "b": "W", "c": "O"},
}

_OPERAND = r"([A-Za-z_]\w*)\s*((?:\[\s*\w*\s*\])+)"
_EQUATION = re.compile(rf"^\s*{_OPERAND}\s*\+?=\s*{_OPERAND}\s*([*+])\s*{_OPERAND}\s*$")
_RELATION = re.compile(r"^\s*(\w+)\s*=\s*(?:(\w+)\s*\*\s*)?(\w+)\s*\+\s*(?:(\w+)\s*\*\s*)?(\w+)\s*$")


def is_zigzag_spec(spec: str) -> bool:
    """True for a spec naming a ZigZag workload: `zigzag:PATH[#LAYER]` or `PATH.yaml[#LAYER]` (cheap: no file read)."""
    text = spec.strip()
    path = text.rpartition("#")[0] if "#" in text else text
    return text.startswith(ZIGZAG_PREFIX) or path.lower().endswith(YAML_SUFFIXES)


def split_zigzag_spec(spec: str) -> tuple[str, str | None]:
    """(the workload's path, the layer: an id or a name, None when not given) of a ZigZag spec; ValueError when
    the path or the layer after '#' is empty."""
    text = spec.strip()
    body = text[len(ZIGZAG_PREFIX):] if text.startswith(ZIGZAG_PREFIX) else text
    path, sep, which = body.rpartition("#") if "#" in body else (body, "", "")
    if not path.strip():
        raise ValueError(f"ZigZag spec {spec!r}: give the workload file, e.g. zigzag:resnet18.yaml#2")
    if sep and not which.strip():
        raise ValueError(f"ZigZag spec {spec!r}: nothing after '#'; give a layer id or name, e.g. {path}#2")
    return path.strip(), (which.strip() if sep else None)


@dataclass(frozen=True)
class ZigzagLayer:
    """One layer of a ZigZag workload read as a dsasim `problem`, with its precisions in bits."""

    where: str  # "ZigZag workload PATH, layer ID (entry N)": the start of every message about it
    layer_id: int
    name: str
    operator_type: str
    problem: Problem
    operand_bits: tuple[tuple[str, int], ...]  # the inputs' precisions (operand name, bits), in equation order
    output_bits: int  # O_final: the output as stored
    partial_bits: int  # O: the partial sums (dsasim keeps them in words)

    def check_word(self, hardware: Accelerator) -> None:
        """ValueError unless every input and the final output are in `hardware`'s word (dsasim has one word size)."""
        bits = hardware.word_bytes * 8
        for operand, b in (*self.operand_bits, ("O_final", self.output_bits)):
            if b != bits:
                fit = (f"give hardware whose word_bytes is {b // 8} (blog: 8-bit, blog-fp32: 32-bit words, or a "
                       f"TOML file)" if b % 8 == 0 else "dsasim's words are whole bytes")
                raise ValueError(f"{self.where}: operand_precision {operand} is {b} bits, but {hardware.name} "
                                 f"counts every tensor in {bits}-bit words (word_bytes {hardware.word_bytes}) and "
                                 f"dsasim models one word size; {fit}")

    def partial_note(self, hardware: Accelerator) -> str | None:
        """What dsasim counts differently from ZigZag's partial-sum precision `O` (None when it is the word)."""
        bits = hardware.word_bytes * 8
        if self.partial_bits == bits:
            return None
        return (f"{self.where}: ZigZag keeps partial sums (operand_precision O) in {self.partial_bits} bits; "
                f"dsasim keeps them in {bits}-bit words, as for every layer: the output buffer and any partial-sum "
                f"read-modify-write are counted at {bits} bits")


# -- reading -------------------------------------------------------------------------------------------------------
def _load_entries(path: str) -> list[Any]:
    """The list of layer entries of a workload file; ValueError naming the file when it is missing, not YAML or
    not a list."""
    what = f"ZigZag workload {path}"
    document = parse_yaml(read_text(path, "ZigZag workload"), what)
    if not isinstance(document, list) or not document:
        found = "an empty file" if document is None else (
            "an empty list" if document == [] else f"a {type(document).__name__}")
        timeloop = " (a Timeloop problem, its top-level key 'problem', is not one)" if (
            isinstance(document, dict) and "problem" in document) else ""
        raise ValueError(f"{what}: a ZigZag workload is a YAML list of layers (- id: 0, operator_type: Conv, "
                         f"equation: ...), found {found}{timeloop}")
    return document


def _entry_id(what: str, index: int, entry: Any) -> int:
    """The `id` of the entry at `index` (0-based); ValueError when the entry is not a mapping with an integer id."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"{what}, entry {index + 1}: a layer is a mapping (id: ..., equation: ...), found "
                         f"{type(entry).__name__}")
    layer_id = entry.get("id")
    if isinstance(layer_id, bool) or not isinstance(layer_id, int):
        raise ValueError(f"{what}, entry {index + 1}: 'id' must be an integer, found {layer_id!r}")
    return layer_id


def _indices(text: str) -> list[str]:
    return [d.upper() for d in re.findall(r"\[\s*(\w*)\s*\]", text) if d]


def _positive(where: str, label: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{where}: {label} must be an integer >= {low}, found {value!r}")
    return value


def _string_list(where: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: {key} must be a list of names, found {value!r}")
    return [v.strip().upper() for v in value]


@dataclass(frozen=True)
class _Window:
    """One image axis of a conv: input dimension P = stride * position + dilation * tap."""

    pr: str
    position: str
    tap: str
    stride: int
    dilation: int


class _LayerReader:
    """Reads one validated entry into a `ZigzagLayer` (its methods raise ValueError starting with `where`)."""

    def __init__(self, where: str, entry: Mapping[str, Any]) -> None:
        self.where = where
        self.entry = entry

    def fail(self, message: str) -> ValueError:
        return ValueError(f"{self.where}: {message}")

    def read(self, layer_id: int) -> ZigzagLayer:
        entry = self.entry
        unknown = [k for k in entry if k not in LAYER_KEYS]
        if unknown:
            raise self.fail(f"unknown key(s) {unknown}; a ZigZag workload layer has {', '.join(LAYER_KEYS)} "
                            f"(mapping keys belong in the mapping file)")
        missing = [k for k in REQUIRED_KEYS if k not in entry]
        if missing:
            raise self.fail(f"missing key(s) {missing}" + (
                "; give every dimension of the equation a size in loop_dims and loop_sizes"
                if "loop_sizes" in missing or "loop_dims" in missing else ""))
        op = entry["operator_type"]
        if not isinstance(op, str) or op not in MAC_OPERATORS:
            raise self.fail(f"operator_type {op!r}: dsasim searches multiply-accumulate layers "
                            f"({', '.join(MAC_OPERATORS)}); pooling and element-wise layers have none for the "
                            f"TensorCore")
        name = entry.get("name")
        if name is not None and not isinstance(name, str):
            raise self.fail(f"name must be a string, found {name!r}")
        name = name or f"Layer{layer_id}"  # ZigZag's own default name (LayerNodeFactory)
        output, inputs, operator = self.equation()
        if operator == "+":
            raise self.fail(f"equation {entry['equation']!r} is an element-wise sum, not a multiply-accumulate: "
                            f"dsasim searches conv and matmul layers")
        sizes = self.loop_sizes()
        windows = self.relations(sizes)
        used = {d for _, idx in (output, *inputs) for d in idx}
        unsized = sorted(used - set(sizes) - {w.pr for w in windows})
        if unsized:
            raise self.fail(f"dimension {unsized[0]} of the equation has no loop size; add it to loop_dims and "
                            f"loop_sizes (or define it in dimension_relations)")
        stray = sorted(d for d in set(sizes) - used if sizes[d] > 1)  # (a size-1 loop changes nothing)
        if stray:
            raise self.fail(f"loop dimension {stray[0]} (size {sizes[stray[0]]}) appears nowhere in the equation")
        problem = (self.conv(name, output, inputs, sizes, windows) if windows
                   else self.matmul(name, output, inputs, sizes))
        bits = self.precisions([n for n, _ in inputs])
        return ZigzagLayer(self.where, layer_id, name, op, problem, tuple((n, bits[n]) for n, _ in inputs),
                           bits["O_final"], bits["O"])

    # -- the parts of an entry
    def equation(self) -> tuple[tuple[str, list[str]], list[tuple[str, list[str]]], str]:
        text = self.entry["equation"]
        m = _EQUATION.match(text) if isinstance(text, str) else None
        if m is None:
            raise self.fail(f"equation {text!r} is not of the form O[..]+=A[..]*B[..] (an output and two indexed "
                            f"inputs), e.g. O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]")
        out_name, out_idx, a_name, a_idx, operator, b_name, b_idx = m.groups()
        if out_name != "O":
            raise self.fail(f"equation {text!r}: the output operand must be named O (ZigZag's rule), found "
                            f"{out_name}")
        if a_name in ("O", b_name) or b_name == "O":
            raise self.fail(f"equation {text!r}: the two inputs need their own names, other than O")
        operands = [(out_name, _indices(out_idx)), (a_name, _indices(a_idx)), (b_name, _indices(b_idx))]
        for name, idx in operands:
            twice = sorted({d for d in idx if idx.count(d) > 1})
            if twice:
                raise self.fail(f"equation {text!r}: operand {name} is indexed by {twice} more than once (a "
                                f"diagonal), which dsasim does not model")
        return operands[0], operands[1:], operator

    def loop_sizes(self) -> dict[str, int]:
        dims = _string_list(self.where, "loop_dims", self.entry["loop_dims"])
        sizes = self.entry["loop_sizes"]
        if not isinstance(sizes, list) or len(sizes) != len(dims):
            raise self.fail(f"loop_sizes must be a list of {len(dims)} sizes, one per loop_dims entry "
                            f"{dims}, found {sizes!r}")
        twice = sorted({d for d in dims if dims.count(d) > 1})
        if twice:
            raise self.fail(f"loop_dims lists {twice} more than once")
        return {d: _positive(self.where, f"loop size of {d}", s) for d, s in zip(dims, sizes)}

    def relations(self, sizes: Mapping[str, int]) -> list[_Window]:
        relations = self.entry.get("dimension_relations") or []
        if not isinstance(relations, list):
            raise self.fail(f"dimension_relations must be a list such as [ix=1*ox+1*fx], found {relations!r}")
        output = _indices(_EQUATION.match(self.entry["equation"]).group(2))  # type: ignore[union-attr]
        windows = []
        for text in relations:
            m = _RELATION.match(text) if isinstance(text, str) else None
            if m is None:
                raise self.fail(f"dimension relation {text!r} is not of the form ix=S*ox+D*fx")
            pr, c1, d1, c2, d2 = m.groups()
            pr, d1, d2 = pr.upper(), d1.upper(), d2.upper()
            coefs = []
            for c in (c1, c2):
                if c is not None and not (c.isdigit() and int(c) >= 1):
                    raise self.fail(f"dimension relation {text!r}: a coefficient must be a whole number >= 1 "
                                    f"(the stride or the dilation), found {c!r}")
                coefs.append(1 if c is None else int(c))
            if pr in sizes:
                raise self.fail(f"dimension relation {text!r}: {pr} is defined by the relation, so loop_dims must "
                                f"not list it (ZigZag's rule)")
            for d in (d1, d2):
                if d not in sizes:
                    raise self.fail(f"dimension relation {text!r}: {d} has no loop size; add it to loop_dims and "
                                    f"loop_sizes")
            in_output = [d for d in (d1, d2) if d in output]
            if len(in_output) != 1:
                which = "both" if in_output else "neither"
                raise self.fail(f"dimension relation {text!r}: dsasim models an input row or column as stride x an "
                                f"output position (a dimension of O) + dilation x a kernel tap (not of O); here "
                                f"{which} of {d1}, {d2} index the output")
            (s, pos), (d, tap) = ((coefs[0], d1), (coefs[1], d2)) if d1 in output else ((coefs[1], d2), (coefs[0], d1))
            windows.append(_Window(pr, pos, tap, s, d))
        prs = [w.pr for w in windows]
        if len(set(prs)) != len(prs):
            raise self.fail(f"dimension_relations define {sorted({p for p in prs if prs.count(p) > 1})} twice")
        return windows

    def precisions(self, inputs: Sequence[str]) -> dict[str, int]:
        given = self.entry["operand_precision"]
        if not isinstance(given, Mapping):
            raise self.fail(f"operand_precision must be a mapping such as {{W: 8, I: 8, O: 16, O_final: 8}}, found "
                            f"{given!r}")
        wanted = [*inputs, "O", "O_final"]
        unknown = [k for k in given if k not in wanted]
        missing = [k for k in wanted if k not in given]
        if unknown or missing:
            raise self.fail(f"operand_precision needs exactly {wanted} (the inputs of the equation, O and "
                            f"O_final): " + "; ".join(p for p in (f"missing {missing}" if missing else "",
                                                                f"unknown {unknown}" if unknown else "") if p))
        return {k: _positive(self.where, f"operand_precision {k}", given[k]) for k in wanted}

    def padding(self, windows: Sequence[_Window]) -> dict[str, tuple[tuple[int, int], int | None]]:
        """Per window's input dimension: its (begin, end) padding and its pr_loop_sizes extent (None: not given)."""
        entry = self.entry
        dims = entry.get("pr_loop_dims")
        pads, extents = entry.get("padding"), entry.get("pr_loop_sizes")
        if dims is None:
            if pads is not None or extents is not None:
                raise self.fail("padding or pr_loop_sizes given without pr_loop_dims naming their dimensions "
                                "(e.g. pr_loop_dims: [IY, IX])")
            return {w.pr: ((0, 0), None) for w in windows}
        dims = _string_list(self.where, "pr_loop_dims", dims)
        known = {w.pr for w in windows}
        for d in dims:
            if d not in known:
                raise self.fail(f"pr_loop_dims names {d}, which no dimension relation defines "
                                f"(relations define {sorted(known)})")
        result: dict[str, tuple[tuple[int, int], int | None]] = {w.pr: ((0, 0), None) for w in windows}
        for key, value in (("padding", pads), ("pr_loop_sizes", extents)):
            if value is not None and (not isinstance(value, list) or len(value) != len(dims)):
                raise self.fail(f"{key} must list one entry per pr_loop_dims entry {dims}, found {value!r}")
        for i, d in enumerate(dims):
            pad: tuple[int, int] = (0, 0)
            if pads is not None:
                pair = pads[i]
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.fail(f"padding of {d} must be [begin, end], found {pair!r}")
                pad = (_positive(self.where, f"padding of {d}", pair[0], 0),
                       _positive(self.where, f"padding of {d}", pair[1], 0))
            extent = None if extents is None else _positive(self.where, f"pr_loop_sizes of {d}", extents[i])
            result[d] = (pad, extent)
        return result

    # -- the problems
    def _roles(self, dims: Sequence[str], sizes: Mapping[str, int], members: Sequence[tuple[str, Sequence[str]]],
               roles: Mapping[tuple[bool, ...], str], kind: str) -> dict[str, list[str]]:
        """Each dimension of `dims` by the operands it indexes (`members`: (label, indices) of the output and the
        two inputs, in the order of the `roles` keys): role -> dimensions; ValueError for a dimension no role
        takes (one of size 1 is dropped: it changes nothing)."""
        found: dict[str, list[str]] = {}
        for d in dims:
            key = tuple(d in idx for _, idx in members)
            role = roles.get(key)
            if role is None:
                if sizes[d] == 1:
                    continue
                names = [label for (label, _), inside in zip(members, key) if inside]
                where = " and ".join(names) + (" only" if len(names) == 1 else "") if names else "no operand"
                raise self.fail(f"dimension {d} (size {sizes[d]}) indexes {where}: dsasim's {kind} has no such "
                                f"dimension")
            found.setdefault(role, []).append(d)
        return found

    def _one(self, role: str, dims: Sequence[str], sizes: Mapping[str, int]) -> int:
        big = [d for d in dims if sizes[d] > 1]
        if len(big) > 1:
            raise self.fail(f"dimensions {big} are both the {role}; dsasim's conv has one {role} dimension")
        return math.prod(sizes[d] for d in dims)

    def conv(self, name: str, output: tuple[str, list[str]], inputs: list[tuple[str, list[str]]],
             sizes: Mapping[str, int], windows: list[_Window]) -> ConvProblem:
        prs = {w.pr: w for w in windows}
        with_pr = [i for i, (_, idx) in enumerate(inputs) if any(d in prs for d in idx)]
        if len(with_pr) != 1:
            raise self.fail("the dimension relations' input dimensions must index exactly one input (the image), "
                            f"found {'both' if with_pr else 'neither'}")
        image_name, image_idx = inputs[with_pr[0]]
        weight_name, weight_idx = inputs[1 - with_pr[0]]
        unused = [w.pr for w in windows if w.pr not in image_idx]
        if unused:
            raise self.fail(f"dimension relations define {unused}, which the image {image_name} does not use")
        if any(d in prs for d in output[1]):
            raise self.fail(f"the output O is indexed by {[d for d in output[1] if d in prs]}, an input dimension "
                            f"of a relation")
        if len(windows) > 2:
            raise self.fail(f"{len(windows)} dimension relations: dsasim's conv is 2-D (at most two window axes)")
        for w in windows:
            if w.tap not in weight_idx or w.tap in image_idx:
                raise self.fail(f"dimension relation of {w.pr}: its kernel tap {w.tap} must index the weight "
                                f"{weight_name} (and not the image {image_name} directly)")
            if w.position in weight_idx or w.position in image_idx:
                raise self.fail(f"dimension relation of {w.pr}: its output position {w.position} must index only "
                                f"the output (and the image through {w.pr})")
        windows = sorted(windows, key=lambda w: output[1].index(w.position))  # rows first, as O[..][oy][ox]
        window_dims = {x for w in windows for x in (w.position, w.tap)}
        plain = [d for d in sizes if d not in window_dims]
        roles = {(True, True, True): "group", (True, True, False): "batch", (True, False, True): "output channel",
                 (False, True, True): "input channel"}
        members = (("the output O", output[1]), (f"the image {image_name}", image_idx),
                   (f"the weight {weight_name}", weight_idx))
        found = self._roles(plain, sizes, members, roles, "conv")
        groups = self._one("group", found.get("group", []), sizes)
        oc = self._one("output channel", found.get("output channel", []), sizes) * groups
        ic = self._one("input channel", found.get("input channel", []), sizes) * groups
        n = math.prod(sizes[d] for d in found.get("batch", []))
        axes = []
        pads = self.padding(windows)
        for w in windows:
            (begin, end), extent = pads[w.pr]
            out, taps = sizes[w.position], sizes[w.tap]
            reach = w.dilation * (taps - 1) + 1
            if extent is None:
                extent = w.stride * (out - 1) + reach - begin - end
                if extent < 1:
                    raise self.fail(f"{w.pr}: padding ({begin}, {end}) leaves no input row for {out} outputs of a "
                                    f"{taps}-tap kernel")
            have = (extent + 2 * begin - reach) // w.stride + 1 if extent + 2 * begin >= reach else 0
            if have != out:
                why = (f"dsasim pads both sides of an axis by the same amount; padded ({begin}, {begin}) "
                       if begin != end else "")
                raise self.fail(f"{w.pr}: an input of {extent} with padding ({begin}, {end}), a {taps}-tap kernel, "
                                f"stride {w.stride} and dilation {w.dilation}: {why}it gives {have} outputs, but "
                                f"{w.position} is {out}")
            axes.append((extent, taps, w.stride, begin, w.dilation))
        if len(axes) == 1:  # a 1-D conv: a width of one column
            axes.append((1, 1, 1, 0, 1))
        (h, kh, sh, ph, dh), (wd, kw, sw, pw, dw) = axes
        try:
            return ConvProblem(n=n, ic=ic, oc=oc, h=h, w=wd, kh=kh, kw=kw, stride=(sh, sw), padding=(ph, pw),
                               dilation=(dh, dw), name=name, groups=groups)
        except ValueError as err:
            raise self.fail(str(err)) from None

    def matmul(self, name: str, output: tuple[str, list[str]], inputs: list[tuple[str, list[str]]],
               sizes: Mapping[str, int]) -> MatmulProblem:
        named_w = [i for i, (n, _) in enumerate(inputs) if n == "W"]
        b = named_w[0] if len(named_w) == 1 else 1  # the weight: the input named W, else the second
        members = (("the output O", output[1]), (f"the input {inputs[1 - b][0]}", inputs[1 - b][1]),
                   (f"the weight {inputs[b][0]}", inputs[b][1]))  # (output, a, b)
        roles = {(True, True, False): "m", (True, False, True): "n", (False, True, True): "k"}
        batched = [d for d in sizes if all(d in idx for _, idx in members) and sizes[d] > 1]
        if batched:
            raise self.fail(f"dimension(s) {batched} index the output and both inputs: a batched matmul, which "
                            f"dsasim's matmul has no axis for; read one batch entry (its loop size 1) and count "
                            f"{math.prod(sizes[d] for d in batched)} of them")
        found = self._roles([d for d in sizes if not all(d in idx for _, idx in members)], sizes, members, roles,
                            "matmul")
        m, n, k = (math.prod(sizes[d] for d in found.get(r, [])) for r in ("m", "n", "k"))
        try:
            return MatmulProblem(m, n, k, name=name)
        except ValueError as err:
            raise self.fail(str(err)) from None


def read_workload(path: str) -> list[ZigzagLayer]:
    """Every layer of a ZigZag workload file read as a dsasim problem; ValueError (one line naming the file, the
    layer and what is wrong) for the first layer dsasim cannot read."""
    entries = _load_entries(path)
    return [_read_entry(path, i, e) for i, e in enumerate(entries)]


def _read_entry(path: str, index: int, entry: Any) -> ZigzagLayer:
    what = f"ZigZag workload {path}"
    layer_id = _entry_id(what, index, entry)
    return _LayerReader(f"{what}, layer {layer_id} (entry {index + 1})", entry).read(layer_id)


def read_layer(path: str, which: str | None = None) -> ZigzagLayer:
    """The layer of a ZigZag workload named by `which` (its id or its name; None: the file's only layer) read as
    a dsasim problem; ValueError (one line naming the file, the layer and what is wrong) otherwise."""
    entries = _load_entries(path)
    what = f"ZigZag workload {path}"
    ids = [_entry_id(what, i, e) for i, e in enumerate(entries)]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"{what}: layer id(s) {twice} appear more than once")
    if which is None:
        if len(entries) > 1:
            macs = [i for i, e in zip(ids, entries) if e.get("operator_type") in MAC_OPERATORS]
            raise ValueError(f"{what} holds {len(entries)} layers; name one by id or name, e.g. "
                             f"zigzag:{path}#{macs[0] if macs else ids[0]} (the conv and matmul layers: "
                             f"{_id_list(macs)})")
        return _read_entry(path, 0, entries[0])
    for i, (layer_id, entry) in enumerate(zip(ids, entries)):
        if which == str(layer_id) or which == entry.get("name"):
            return _read_entry(path, i, entry)
    raise ValueError(f"{what}: no layer with id or name {which!r}; its ids are {_id_list(ids)}")


def _id_list(ids: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:12])
    return (shown + f", ... ({len(ids)} in all)") if len(ids) > 12 else (shown or "none")


# -- writing -------------------------------------------------------------------------------------------------------
def workload_yaml(problem: Problem, word_bits: int, layer_id: int = 0) -> str:
    """`problem` as a ZigZag workload YAML of one layer (ZigZag's letters: `ZIGZAG_DIMS`), every operand in
    `word_bits`; `read_layer` reads it back as the same problem."""
    dims = ZIGZAG_DIMS[problem.kind]
    lines = [f"# {problem.describe()}", f"# written by dsasim from {problem.spec()}",
             f"- id: {layer_id}", f"  name: {json.dumps(problem.name)}"]
    if isinstance(problem, ConvProblem):
        g = "[g]" if problem.groups > 1 else ""
        lines += ["  operator_type: Conv",
                  f"  equation: O[b]{g}[k][oy][ox]+=W{g}[k][c][fy][fx]*I[b]{g}[c][iy][ix]"]
        (sh, sw), (ph, pw), (dh, dw) = problem.stride, problem.padding, problem.dilation
        lines.append(f"  dimension_relations: [iy={sh}*oy+{dh}*fy, ix={sw}*ox+{dw}*fx]")
    else:
        lines += ["  operator_type: Gemm", "  equation: O[d][k]+=I[d][c]*W[c][k]", "  dimension_relations: []"]
    order = [d for d in problem.dims]
    lines.append(f"  loop_dims: [{', '.join(dims[d] for d in order)}]")
    lines.append(f"  loop_sizes: [{', '.join(str(problem.extents[d]) for d in order)}]")
    lines.append(f"  operand_precision: {{W: {word_bits}, I: {word_bits}, O: {word_bits}, O_final: {word_bits}}}")
    lines.append(f"  operand_source: {{W: {layer_id}, I: {layer_id}}}")
    if isinstance(problem, ConvProblem):
        lines += ["  pr_loop_dims: [IY, IX]", f"  pr_loop_sizes: [{problem.h}, {problem.w}]",
                  f"  padding: [[{ph}, {ph}], [{pw}, {pw}]]"]
    return "\n".join(lines) + "\n"
