"""Op patterns of a traced network that are one layer, not many: RMSNorm and rotary embeddings written by hand.

`find_patterns(graph)` finds, before the importer (`dsasim.architect.studies.network`) walks the graph:

- **RMSNorm** as Llama writes it, `x * rsqrt(mean(x**2, -1) + eps)` (optionally times a weight `w`; `x*x` or
  `square(x)` for the square): one `rms_norm` vector layer, counted as `F.rms_norm` is (the import's norms: three
  lane operations per element; x and the weight read, the result written);
- **RoPE** in the rotate-half form, `x * cos + cat(-x[..., h:], x[..., :h]) * sin`: one `rope` vector layer
  reading x and the two tables and writing its result, with lane operations per element of x: the two
  products and their sum (3) and the negation of half of it (1/2): 7 per 2 elements.

A pattern matches only where its inner nodes are used nowhere else (their values are its own), so no op is counted
twice and no consumer loses its producer. Every other node is left to the importer's rules.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

__all__ = ["PatternMatch", "find_patterns", "ROPE_LANE_OPS_PER_2_ELEMENTS"]

ROPE_LANE_OPS_PER_2_ELEMENTS = 7  # per pair of elements: x*cos and rot*sin (2 each), their sums (2), one negation
_CASTS = {"to", "float", "type_as", "contiguous", "half", "bfloat16"}  # move no data here (views to the importer)


@dataclass(frozen=True)
class PatternMatch:
    """One matched pattern: its op, its result node, every node it covers, the node it transforms and the other
    tensor operands it reads (a weight; cos and sin tables)."""

    op: str  # "rms_norm" or "rope"
    root: Any
    nodes: frozenset
    input: Any
    tables: tuple[Any, ...]


def _name(node: Any) -> str:
    """The node's function or method name ('' for placeholders and modules)."""
    if node.op == "call_method":
        return str(node.target)
    if node.op == "call_function":
        if node.target is operator.getitem:
            return "getitem"
        return getattr(node.target, "__name__", str(node.target))
    return ""


def _is_node(value: Any) -> bool:
    import torch.fx

    return isinstance(value, torch.fx.Node)


def _uncast(node: Any, covered: list[Any]) -> Any:
    """`node` with dtype casts (x.to(float32), x.float()) stripped, the casts stripped added to `covered`."""
    while _is_node(node) and _name(node) in _CASTS and node.args and _is_node(node.args[0]):
        covered.append(node)
        node = node.args[0]
    return node


def _only_user(node: Any) -> Any | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _forward_casts(node: Any, covered: list[Any]) -> Any:
    """Past the casts that are `node`'s only user (each added to `covered`): the node that uses the value."""
    while True:
        user = _only_user(node)
        if user is None or _name(user) not in _CASTS:
            return node
        covered.append(user)
        node = user


def _operands(node: Any) -> list[Any]:
    return [a for a in node.args if _is_node(a)]


def _match_rms_norm(rsqrt: Any) -> PatternMatch | None:
    covered: list[Any] = [rsqrt]
    if not rsqrt.args or not _is_node(rsqrt.args[0]):
        return None
    add = rsqrt.args[0]
    if _name(add) not in ("add", "iadd") or len(_operands(add)) != 1:
        return None  # mean + eps, the epsilon a number
    covered.append(add)
    mean = _operands(add)[0]
    if _name(mean) != "mean" or not mean.args or not _is_node(mean.args[0]):
        return None
    covered.append(mean)
    square = mean.args[0]
    name = _name(square)
    if name == "pow" and len(square.args) > 1 and square.args[1] == 2:
        x = square.args[0]
    elif name == "mul" and len(square.args) == 2 and square.args[0] is square.args[1]:
        x = square.args[0]
    elif name == "square":
        x = square.args[0]
    else:
        return None
    covered.append(square)
    user = _only_user(_forward_casts(rsqrt, covered))
    if user is None or _name(user) != "mul" or len(_operands(user)) != 2:
        return None
    other = next((a for a in _operands(user) if a not in covered), None)
    if other is not x:  # the product's other operand must be the x that was squared
        return None
    covered.append(user)
    root, tables = user, ()
    casts: list[Any] = []  # casts between the product and the weight's multiply: the pattern's only if it has one
    after = _forward_casts(user, casts)
    scale = _only_user(after)
    if scale is not None and _name(scale) == "mul" and len(_operands(scale)) == 2:
        weight = next((a for a in _operands(scale) if a is not after), None)
        if weight is not None and _uncast(weight, []).op == "get_attr":
            covered += casts + [scale]
            root, tables = scale, (weight,)
    for inner in covered:
        if inner is not root and any(u not in covered for u in inner.users):
            return None  # an inner value used elsewhere: not this pattern's alone
    return PatternMatch("rms_norm", root, frozenset(covered), x, tables)


def _slice_of(node: Any) -> tuple[Any, Any, Any] | None:
    """(base, start, stop) of `base[..., start:stop]`, else None."""
    if _name(node) != "getitem" or len(node.args) != 2 or not _is_node(node.args[0]):
        return None
    index = node.args[1]
    if not (isinstance(index, tuple) and len(index) == 2 and index[0] is Ellipsis and isinstance(index[1], slice)):
        return None
    return node.args[0], index[1].start, index[1].stop


def _match_rope(add: Any) -> PatternMatch | None:
    ops = _operands(add)
    if len(ops) != 2 or not all(_name(o) == "mul" and len(_operands(o)) == 2 for o in ops):
        return None
    for plain, rotated in (ops, ops[::-1]):
        for rot, sin in (_operands(rotated), _operands(rotated)[::-1]):
            if _name(rot) not in ("cat", "concat") or not rot.args or not isinstance(rot.args[0], (list, tuple)):
                continue
            parts = rot.args[0]
            if len(parts) != 2 or not all(_is_node(p) for p in parts) or _name(parts[0]) != "neg":
                continue
            hi, lo = _slice_of(parts[0].args[0]), _slice_of(parts[1])
            if hi is None or lo is None or hi[0] is not lo[0] or hi[2] is not None or lo[1] is not None:
                continue
            x = hi[0]
            if x not in _operands(plain):
                continue
            cos = next((a for a in _operands(plain) if a is not x), x if _operands(plain) == [x, x] else None)
            if cos is None or cos is x:
                continue
            covered = [add, plain, rotated, rot, parts[0], parts[0].args[0], parts[1]]
            if any(u not in covered for inner in covered if inner is not add for u in inner.users):
                continue
            return PatternMatch("rope", add, frozenset(covered), x, (cos, sin))
    return None


def find_patterns(graph: Any) -> dict[Any, PatternMatch]:
    """Every node of every matched pattern (module doc) -> its match."""
    found: dict[Any, PatternMatch] = {}
    for node in graph.nodes:
        if node in found:
            continue
        name = _name(node)
        match = _match_rms_norm(node) if name == "rsqrt" else _match_rope(node) if name == "add" else None
        if match is not None and not any(n in found for n in match.nodes):
            found.update({n: match for n in match.nodes})
    return found
