"""Runs of ONNX nodes that are one layer: LayerNorm and GELU as exporters decompose them.

`match_onnx_pattern(builder, node)` finds, as `network_onnx` reaches each node (its inputs translated):

- **LayerNorm** over the last axis as opsets before 17 write it: mean = ReduceMean(x), d = Sub(x, mean),
  var = ReduceMean(Pow(d, 2)), Div(d, Sqrt(Add(var, eps))) [then Mul by a constant weight, Add a constant bias]:
  one F.layer_norm (a vector layer: three lane operations per element, x and the parameters read, the result
  written, as the importer counts nn.LayerNorm);
- **GELU** in the erf form torch exports: Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5): one F.gelu (on a
  layer's output tile, an epilogue, as nn.GELU is).

A pattern matches only where each inner value is used by the pattern alone (so no consumer loses its producer and
no op is counted twice); its inner nodes are skipped and its last node (the root) becomes the one layer.
"""

from __future__ import annotations

import math
from typing import Any, Callable

# the builder of `network_onnx` (its values, constants, users and shape lookups): Any here, so that this module,
# which it imports, imports nothing of it
_Builder = Any

__all__ = ["match_onnx_pattern"]

_TOLERANCE = 1e-3  # how close a constant must be to the one the pattern needs (sqrt 2, 1, 0.5, 2)


def _scalar(b: _Builder, name: str) -> float | None:
    """The value of a one-element constant `name`, else None."""
    if not b.is_const(name):
        return None
    value = b.const(name)
    return float(value.reshape(-1)[0]) if value.size == 1 else None


def _near(value: float | None, want: float) -> bool:
    return value is not None and abs(value - want) <= _TOLERANCE * max(1.0, abs(want))


def _only_user(b: _Builder, name: str, op_type: str) -> Any | None:
    """The one node using value `name`, when it is an `op_type` and `name` is no graph output."""
    users = b.users.get(name, [])
    if len(users) != 1 or users[0].op_type != op_type or name in b.outputs:
        return None
    return users[0]


def _other(node: Any, name: str) -> str | None:
    """The other input of a two-input node one of whose inputs is `name`."""
    ins = [i for i in node.input if i]
    if len(ins) != 2 or name not in ins:
        return None
    return ins[1] if ins[0] == name else ins[0]


def _layer_norm(b: _Builder, mean: Any) -> tuple[list[Any], Callable[[_Builder, str], Any], str] | None:
    """The decomposed LayerNorm whose first ReduceMean is `mean`: (its nodes, root last; how to build it)."""
    x = mean.input[0]
    if x not in b.values:
        return None
    rank = len(b.shape_of(x))
    axes = b.ints_of(mean, "axes", 1)
    if axes is None or [b.axis(a, rank) for a in axes] != [rank - 1]:
        return None
    sub = _only_user(b, mean.output[0], "Sub")
    if sub is None or list(sub.input) != [x, mean.output[0]]:
        return None
    d = sub.output[0]
    users = b.users.get(d, [])
    if d in b.outputs or sorted(u.op_type for u in users) != ["Div", "Pow"]:
        return None
    pow_ = next(u for u in users if u.op_type == "Pow")
    div = next(u for u in users if u.op_type == "Div")
    if list(pow_.input)[0] != d or not _near(_scalar(b, pow_.input[1]), 2.0) or list(div.input)[0] != d:
        return None
    var = _only_user(b, pow_.output[0], "ReduceMean")
    if var is None or [b.axis(a, rank) for a in (b.ints_of(var, "axes", 1) or [])] != [rank - 1]:
        return None
    add = _only_user(b, var.output[0], "Add")
    eps = _scalar(b, _other(add, var.output[0]) or "") if add is not None else None
    if eps is None:
        return None
    sqrt = _only_user(b, add.output[0], "Sqrt")
    if sqrt is None or _only_user(b, sqrt.output[0], "Div") is not div or list(div.input)[1] != sqrt.output[0]:
        return None
    nodes = [mean, sub, pow_, var, add, sqrt, div]
    weight = bias = None
    width = b.shape_of(x)[-1]
    mul = _only_user(b, div.output[0], "Mul")
    if mul is not None:
        w = _other(mul, div.output[0])
        if w is not None and b.is_const(w) and math.prod(b.shape_of(w)) == width:
            weight = w
            nodes.append(mul)
            shift = _only_user(b, mul.output[0], "Add")
            c = _other(shift, mul.output[0]) if shift is not None else None
            if c is not None and b.is_const(c) and math.prod(b.shape_of(c)) == width:
                bias = c
                nodes.append(shift)

    def build(b: _Builder, label: str) -> Any:
        import torch.nn.functional as F
        w = b.weight(weight, (width,)) if weight is not None else None
        c = b.weight(bias, (width,)) if bias is not None else None
        return b.call(F.layer_norm, (b.tensor(x), (width,), w, c, float(eps)), label)
    return nodes, build, "layer_norm"


def _gelu(b: _Builder, div: Any) -> tuple[list[Any], Callable[[_Builder, str], Any], str] | None:
    """The erf-form GELU whose first node is `div` (x / sqrt 2, or x * (1 / sqrt 2)): (its nodes, root last; how
    to build it)."""
    x = div.input[0]
    scale = _scalar(b, div.input[1]) if len(div.input) == 2 else None
    if not (_near(scale, math.sqrt(2.0)) if div.op_type == "Div" else _near(scale, 1 / math.sqrt(2.0))):
        return None
    erf = _only_user(b, div.output[0], "Erf")
    if erf is None:
        return None
    add = _only_user(b, erf.output[0], "Add")
    if add is None or not _near(_scalar(b, _other(add, erf.output[0]) or ""), 1.0):
        return None
    mul = _only_user(b, add.output[0], "Mul")
    if mul is None or _other(mul, add.output[0]) != x:
        return None
    half = _only_user(b, mul.output[0], "Mul")
    if half is None or not _near(_scalar(b, _other(half, mul.output[0]) or ""), 0.5):
        return None

    def build(b: _Builder, label: str) -> Any:
        import torch.nn.functional as F
        return b.call(F.gelu, (b.tensor(x),), label)
    return [div, erf, add, mul, half], build, "gelu"


# by the op type of a pattern's first node (in the graph's order: its input is translated when it is reached)
_FINDERS = {"ReduceMean": _layer_norm, "Div": _gelu, "Mul": _gelu}


def match_onnx_pattern(b: _Builder, node: Any) -> tuple[list[Any], Callable[[_Builder, str], Any], str] | None:
    """The pattern whose first node is `node`, as (its nodes, root last; how to build its one layer; its op), else
    None."""
    finder = _FINDERS.get(node.op_type)
    if finder is None:
        return None
    try:
        return finder(b, node)
    except Exception:  # noqa: BLE001 - a shape or constant the pattern cannot read: no match, the nodes stay
        return None
