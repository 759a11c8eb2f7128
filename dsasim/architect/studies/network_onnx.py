"""ONNX models in: `dsasim network model.onnx --input-shape 1,3,224,224` reads an ONNX graph as a `Network`.

The route: the `onnx` package reads the file, and each ONNX node becomes the torch.fx node of the torch function
that computes it (Conv -> F.conv2d, Gemm and MatMul by a constant -> F.linear, MatMul -> torch.matmul, Relu ->
torch.relu, Reshape/Flatten/Transpose/Squeeze/Slice -> views, ...), its output shape computed as it is built by
running that function on fake tensors (no weight is read, no data computed). The graph then goes through the same
importer as a traced module (`network.network_from_graph`), so every rule of that importer holds for ONNX models
too: a batch norm folded into its conv, epilogues (bias, activation, residual add) fused on a layer's output tile,
conv and feed-forward chains, the matmul -> softmax -> matmul attention recognised as an `attention` group,
views that move no data. Why not a converter such as onnx2torch: it makes its own modules (OnnxBinaryMathOperation,
OnnxMatMul, OnnxReshape, ...) the importer does not know, so a table mapping them back would be needed anyway, on top
of a dependency with its own torch compatibility; why not a second importer over ONNX nodes: each of those rules
would be written twice and drift apart.

What the exporters write that a module does not:

- shape arithmetic (Shape, Gather, Unsqueeze, Concat, ... on sizes) is evaluated here once the input's shape is
  known: a dynamic dimension (`batch`) is resolved from `--input-shape`, and a Reshape whose target shape it
  computes is a view like any other;
- a MatMul by a constant 2-d weight whose only user adds a constant bias (how exporters write nn.Linear on a 3-d
  input) is one linear layer with its bias; Gemm is a linear layer (transB, alpha as a scale on the output tile);
- LayerNorm written as nodes (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div[, Mul, Add]: opsets before 17)
  and GELU written with Erf (x * (1 + erf(x / sqrt 2)) * 0.5) are recognised as the one layer_norm / gelu they are;
- an op this module does not translate (Einsum, ConvTranspose, Resize, ...) is an unmodelled layer named by its
  node and op type (its output shape from ONNX's shape inference where it can tell), never dropped.
"""

from __future__ import annotations

import math
import operator
import os
from typing import Any, Callable

__all__ = ["ONNX_TRANSLATED_OPS", "OnnxGraph", "OnnxModelError", "read_onnx"]

INSTALL_HINT = "pip install 'dsasim[onnx]'"


class OnnxModelError(ValueError):
    """An ONNX file that cannot be read (no onnx package, not ONNX, a malformed graph, a shape that does not fit);
    its message is one line naming the file."""


class OnnxGraph:
    """An ONNX model read as a torch.fx graph whose nodes carry fake-tensor values (`meta['val']`), as
    `network.network_from_graph` takes it; `untranslated`: (layer name, op type, reason) of each node left
    unmodelled, in the graph's order."""

    def __init__(self, graph: Any, input_shape: tuple[int, ...], untranslated: tuple[tuple[str, str, str], ...]
                 ) -> None:
        self.graph, self.input_shape, self.untranslated = graph, input_shape, untranslated

    def get_submodule(self, target: str) -> Any:
        """(An ONNX graph calls no modules: every node is a function call.)"""
        raise AttributeError(f"an ONNX graph calls no modules ({target!r})")


def read_onnx(path: str, input_shape: tuple[int, ...] | None = None) -> OnnxGraph:
    """The ONNX model at `path` as an OnnxGraph; its first input's shape from `input_shape` (elements), else from
    the file where it is static. OnnxModelError (one line naming the file) for a missing onnx package, a file that
    is not a valid ONNX model, a shape that does not fit the graph's input, or an input left without a shape."""
    try:
        import onnx
    except ImportError:
        raise OnnxModelError(f"reading {path} needs the onnx package ({INSTALL_HINT})") from None
    model = _read_model(onnx, path)
    shapes = _input_shapes(model, path, input_shape)
    builder = _Builder(model, path, shapes)
    builder.translate()
    untranslated = tuple((name, builder.opaque[name], reason) for name, reason in builder.reasons.items())
    return OnnxGraph(builder.graph, next(iter(shapes.values())), untranslated)


def _read_model(onnx: Any, path: str) -> Any:
    """The parsed, checked ModelProto; OnnxModelError naming the file and what is wrong otherwise."""
    if not os.path.isfile(path):
        raise OnnxModelError(f"{path}: no such file")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as err:  # noqa: BLE001 - protobuf's DecodeError and friends: not an ONNX file
        raise OnnxModelError(f"{path}: not an ONNX model (it does not parse: {_first_line(err)})") from None
    if model.ir_version < 1 or not model.graph.node:
        raise OnnxModelError(f"{path}: not an ONNX model (no IR version or no graph nodes)")
    try:
        onnx.checker.check_model(model)
    except Exception as err:  # noqa: BLE001 - onnx.checker.ValidationError: a malformed graph
        raise OnnxModelError(f"{path}: not a valid ONNX model: {_first_line(err)}") from None
    return model


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    text = lines[0] if lines else type(err).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _dims_text(dims: list[int | str]) -> str:
    return ",".join(str(d) for d in dims)


def _input_shapes(model: Any, path: str, input_shape: tuple[int, ...] | None) -> dict[str, tuple[int, ...]]:
    """Each graph input (not an initializer) -> its shape: the first from `input_shape` when given, each dynamic
    dimension resolved or refused in one line saying which input needs a shape."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    if not inputs:
        raise OnnxModelError(f"{path}: the graph has no input")
    shapes: dict[str, tuple[int, ...]] = {}
    for position, value in enumerate(inputs):
        if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
            raise OnnxModelError(f"{path}: input {value.name!r} is not a tensor of known rank")
        dims: list[int | str] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                                 for d in value.type.tensor_type.shape.dim]
        if position == 0 and input_shape is not None:
            given = ",".join(map(str, input_shape))
            if len(input_shape) != len(dims):
                raise OnnxModelError(f"{path}: --input-shape {given} has {len(input_shape)} dimensions; input "
                                         f"{value.name!r} has {len(dims)} ({_dims_text(dims)})")
            for axis, (want, have) in enumerate(zip(dims, input_shape)):
                if isinstance(want, int) and want > 0 and want != have:
                    raise OnnxModelError(f"{path}: --input-shape {given} does not match input {value.name!r} "
                                             f"({_dims_text(dims)}): dimension {axis} is fixed at {want}")
            shapes[value.name] = tuple(input_shape)
            continue
        if any(not isinstance(d, int) or d < 1 for d in dims):
            how = ("give --input-shape, e.g. " + ",".join(str(d) if isinstance(d, int) and d > 0 else "1"
                                                          for d in dims)) if position == 0 else (
                "dsasim takes one input shape (--input-shape is the first input's); export the model with this "
                "input's shape fixed")
            raise OnnxModelError(f"{path}: input {value.name!r} has a dynamic shape ({_dims_text(dims)}): {how}")
        shapes[value.name] = tuple(int(d) for d in dims)
    return shapes


# ------------------------------------------------------------------------------------------------ the builder
class _Opaque:
    """The target of an fx node standing for an ONNX op that is not translated: its name is the op type, which
    the importer does not know, so it lists the node as unmodelled."""

    def __init__(self, op_type: str) -> None:
        self.__name__ = op_type

    def __call__(self, *args: Any) -> Any:
        raise NotImplementedError(f"{self.__name__} is not translated")


class _Builder:
    """Walks the ONNX graph once, building a torch.fx graph whose nodes carry fake-tensor values (`meta['val']`),
    and evaluating shape arithmetic on constants (numpy) as it goes."""

    def __init__(self, model: Any, path: str, input_shapes: dict[str, tuple[int, ...]]) -> None:
        import torch
        import torch.fx
        from torch._subclasses.fake_tensor import FakeTensorMode

        self.model, self.path = model, path
        self.graph = torch.fx.Graph()
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
        self.values: dict[str, Any] = {}  # ONNX value name -> fx node (a tensor)
        self.consts: dict[str, Any] = {}  # ONNX value name -> numpy array (a constant known here)
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.users: dict[str, list[Any]] = {}
        for node in model.graph.node:
            for name in node.input:
                if name:
                    self.users.setdefault(name, []).append(node)
        self.outputs = {o.name for o in model.graph.output}
        self.reasons: dict[str, str] = {}  # layer name -> why an ONNX node is unmodelled (in the graph's order)
        self.opaque: dict[str, str] = {}  # layer name -> op type of each untranslated node
        self.skipped: set[int] = set()  # ids of nodes a pattern or a peephole took in
        self.inferred: dict[str, tuple[tuple[int, ...], Any]] | None = None  # ONNX shape inference, when needed
        self.input_shapes = input_shapes
        with self.mode:
            for name, shape in input_shapes.items():
                value = next(i for i in model.graph.input if i.name == name)
                node = self.graph.placeholder(_fx_name(name))
                node.meta["val"] = torch.empty(shape, dtype=_torch_dtype(value.type.tensor_type.elem_type))
                self.values[name] = node

    # --------------------------------------------------------------------------------- values
    @staticmethod
    def axis(axis: int, rank: int) -> int:
        """An ONNX axis (negative: from the end) as a non-negative index; ValueError when out of range."""
        return _axis(axis, rank)

    def ints_of(self, node: Any, attr: str, index: int) -> list[int] | None:
        """A list of ints given as attribute `attr` (older opsets) or constant input `index` (newer), or None."""
        return _ints_of(self, node, attr, index)

    def weight(self, name: str, shape: tuple[int, ...]) -> Any:
        """A get_attr node of constant `name` seen with `shape`."""
        return _weight_node(self, name, shape)

    def const(self, name: str) -> Any:
        """The numpy value of `name` when it is known here (an initializer, a Constant, shape arithmetic), else
        None."""
        if not name:
            return None
        if name in self.consts:
            return self.consts[name]
        if name in self.initializers and name not in self.values:
            from onnx import numpy_helper
            self.consts[name] = numpy_helper.to_array(self.initializers[name])
            return self.consts[name]
        return None

    def is_const(self, name: str) -> bool:
        return bool(name) and (name in self.consts or (name in self.initializers and name not in self.values))

    def tensor(self, name: str) -> Any:
        """The fx node of tensor `name`; a constant (a weight) becomes a get_attr node of its shape."""
        if name in self.values:
            return self.values[name]
        if name in self.initializers:
            init = self.initializers[name]
            shape, dtype = tuple(int(d) for d in init.dims), _torch_dtype(init.data_type)
        elif name in self.consts:
            value = self.consts[name]
            shape, dtype = tuple(int(d) for d in value.shape), _numpy_to_torch_dtype(value.dtype)
        else:
            raise _Untranslatable(f"its input {name!r} is unknown")
        import torch
        node = self.graph.get_attr(_fx_name(name))
        with self.mode:
            node.meta["val"] = torch.empty(shape, dtype=dtype)
        self.values[name] = node
        return node

    def operand(self, name: str) -> Any:
        """An elementwise op's operand: a one-element constant as a Python number (as `x / 8` in a module),
        else the tensor's fx node."""
        value = self.const(name) if self.is_const(name) else None
        if value is not None and value.size == 1:
            item = value.reshape(()).item()
            return float(item) if isinstance(item, float) else item
        return self.tensor(name)

    def shape_of(self, name: str) -> tuple[int, ...]:
        """The shape of tensor or constant `name`."""
        if self.is_const(name):
            return tuple(int(d) for d in self.const(name).shape)
        node = self.tensor(name)
        val = node.meta.get("val")
        if val is None or not hasattr(val, "shape"):
            raise _Untranslatable(f"the shape of its input {name!r} is unknown")
        return tuple(int(d) for d in val.shape)

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], name: str, kwargs: dict[str, Any] | None = None
             ) -> Any:
        """An fx node calling `fn(*args, **kwargs)` (fx nodes among args), named `name`, its value computed on
        fake tensors."""
        import torch.fx

        kwargs = kwargs or {}
        def val(a: Any) -> Any:
            if isinstance(a, torch.fx.Node):
                if "val" not in a.meta:
                    raise _Untranslatable(f"the shape of its input {a.name!r} is unknown")
                return a.meta["val"]
            return a
        real_args = torch.fx.node.map_aggregate(args, val)
        real_kwargs = torch.fx.node.map_aggregate(kwargs, val)
        with self.mode:
            try:
                result = fn(*real_args, **real_kwargs)
            except _Untranslatable:
                raise
            except Exception as err:  # noqa: BLE001 - the graph's shapes do not fit the op
                raise _BadGraph(_first_line(err)) from None
        node = self.graph.call_function(fn, args, kwargs)
        node.name = name
        node.meta["val"] = result
        return node

    # --------------------------------------------------------------------------------- walking
    def translate(self) -> None:
        """Every node of the graph, in order (ONNX keeps them sorted topologically)."""
        from dsasim.architect.studies.network_onnx_patterns import match_onnx_pattern

        patterns: dict[int, tuple[Callable[[_Builder, str], Any], str]] = {}  # id(a root) -> (how to build, label)
        for node in self.model.graph.node:  # constants first: a pattern reads its constants before they are reached
            if node.op_type == "Constant" and not node.input:
                try:
                    self.consts.update(zip(node.output, _CONST_OPS["Constant"](self, node)))
                except (_Untranslatable, ValueError, TypeError) as err:
                    raise OnnxModelError(f"{self.path}: node {node.name!r} (Constant): {err}") from None
                self.skipped.add(id(node))
        for node in self.model.graph.node:
            if id(node) in self.skipped:
                continue
            if id(node) not in patterns:
                match = match_onnx_pattern(self, node)
                if match is not None:
                    nodes, build, op = match
                    self.skipped.update(id(n) for n in nodes[:-1])
                    patterns[id(nodes[-1])] = (build, _pattern_label(nodes, op))
                    if nodes[-1] is not node:
                        continue
            label = node.name or (node.output[0] if node.output else node.op_type)
            try:
                pattern = patterns.get(id(node))
                if pattern is not None:
                    build, label = pattern
                    outputs = [build(self, label)]
                elif all(self.is_const(i) for i in node.input if i) and node.op_type in _CONST_OPS:
                    outputs = _CONST_OPS[node.op_type](self, node)
                    for out, value in zip(node.output, outputs):
                        self.consts[out] = value
                    continue
                elif node.op_type in _TRANSLATIONS:
                    outputs = _TRANSLATIONS[node.op_type](self, node, label)
                else:
                    outputs = self.untranslated(node, label, f"ONNX op {node.op_type} is not modelled by dsasim")
            except _Untranslatable as err:
                outputs = self.untranslated(node, label, f"ONNX op {node.op_type}: {err}")
            except _BadGraph as err:
                raise OnnxModelError(f"{self.path}: node {label!r} ({node.op_type}): {err}") from None
            except (ValueError, TypeError, IndexError, KeyError) as err:  # an attribute or operand out of form
                raise OnnxModelError(f"{self.path}: node {label!r} ({node.op_type}): "
                                     f"{_first_line(err)}") from None
            for out, value in zip(node.output, outputs):
                if not out:
                    continue
                if value is None:
                    continue
                if _is_fx_node(value):
                    self.values[out] = value
                else:
                    self.consts[out] = value

    def untranslated(self, node: Any, label: str, reason: str) -> list[Any]:
        """An unmodelled fx node for `node` (its tensor inputs its operands, its output shapes from ONNX's shape
        inference where known), one per output through getitem when it has several."""
        import torch

        args = tuple(self.values[i] for i in node.input if i and i in self.values)
        fn = _Opaque(node.op_type)
        fx_node = self.graph.call_function(fn, args)
        fx_node.name = label
        self.reasons[label] = reason
        self.opaque[label] = node.op_type
        inferred = self.inferred_shapes()
        vals = []
        with self.mode:
            for out in node.output:
                known = inferred.get(out)
                vals.append(torch.empty(known[0], dtype=known[1]) if known is not None else None)
        if len(node.output) == 1:
            if vals[0] is not None:
                fx_node.meta["val"] = vals[0]
            return [fx_node]
        outs = []
        for i, val in enumerate(vals):
            item = self.graph.call_function(operator.getitem, (fx_node, i))
            if val is not None:
                item.meta["val"] = val
            outs.append(item)
        return outs

    def inferred_shapes(self) -> dict[str, tuple[tuple[int, ...], Any]]:
        """Every value's (shape, dtype) that ONNX's shape inference finds with the inputs' shapes fixed (computed
        once, when an untranslated op needs its output shape)."""
        if self.inferred is not None:
            return self.inferred
        import onnx

        self.inferred = {}
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        for value in model.graph.input:
            if value.name in self.input_shapes:
                dims = value.type.tensor_type.shape.dim
                for dim, size in zip(dims, self.input_shapes[value.name]):
                    dim.Clear()
                    dim.dim_value = size
        try:
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        except Exception:  # noqa: BLE001 - inference is a best effort: the shapes stay unknown
            return self.inferred
        for value in list(inferred.graph.value_info) + list(inferred.graph.output):
            t = value.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
            if t.HasField("shape") and all(d >= 0 for d in dims):
                self.inferred[value.name] = (tuple(dims), _torch_dtype(t.elem_type))
        return self.inferred


def _pattern_label(nodes: list[Any], op: str) -> str:
    """A recognised pattern's layer name: the scope its nodes share and the op (/norm1/ + layer_norm), else the op
    and its last node's name."""
    scopes = {n.name.rpartition("/")[0] for n in nodes}
    scope = scopes.pop() if len(scopes) == 1 else ""
    return f"{scope}/{op}" if scope else f"{op}:{nodes[-1].name or nodes[-1].output[0]}"


class _Untranslatable(Exception):
    """A node this module cannot translate (an op form, an unknown shape): it becomes an unmodelled layer."""


class _BadGraph(Exception):
    """The graph is wrong (an op's operands do not fit): the model is refused in one line."""


def _is_fx_node(value: Any) -> bool:
    import torch.fx
    return isinstance(value, torch.fx.Node)


def _fx_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "value"


def _torch_dtype(onnx_type: int) -> Any:
    """The torch dtype of an ONNX element type (float32 where there is none: only shapes matter here)."""
    import numpy as np
    from onnx import helper

    try:
        return _numpy_to_torch_dtype(np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type)))
    except (KeyError, TypeError, ValueError):
        import torch
        return torch.float32


def _numpy_to_torch_dtype(dtype: Any) -> Any:
    import numpy as np
    import torch

    try:
        return torch.from_numpy(np.empty(0, dtype=dtype)).dtype
    except TypeError:
        return torch.float32


# ------------------------------------------------------------------------------------------ attributes
def _attr(node: Any, name: str, default: Any) -> Any:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            value = helper.get_attribute_value(a)
            return value.decode() if isinstance(value, bytes) else value
    return default


def _ints_of(b: _Builder, node: Any, attr: str, index: int) -> list[int] | None:
    """A list of ints given as attribute `attr` (older opsets) or as constant input `index` (newer), or None."""
    value = _attr(node, attr, None)
    if value is not None:
        return [int(v) for v in value]
    if len(node.input) > index and node.input[index]:
        if not b.is_const(node.input[index]):
            raise _Untranslatable(f"its {attr} are computed at run time")
        return [int(v) for v in b.const(node.input[index]).reshape(-1)]
    return None


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


# ----------------------------------------------------------------------------------- tensor translations
def _conv(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch.nn.functional as F

    x, w = node.input[0], node.input[1]
    xs, ws = b.shape_of(x), b.shape_of(w)
    if len(xs) != 4 or len(ws) != 4:
        raise _Untranslatable(f"a {len(xs) - 2}-d convolution (only 2-d is modelled)")
    kh, kw = _ints_of(b, node, "kernel_shape", 99) or list(ws[2:])
    strides = _ints_of(b, node, "strides", 99) or [1, 1]
    dilations = _ints_of(b, node, "dilations", 99) or [1, 1]
    pads = _conv_pads(node, xs[2:], (kh, kw), strides, dilations)
    if pads[0] != pads[2] or pads[1] != pads[3]:
        raise _Untranslatable(f"asymmetric padding {pads} (dsasim's conv pads each side alike)")
    bias = b.tensor(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    return [b.call(F.conv2d, (b.tensor(x), b.tensor(w), bias, tuple(strides), (pads[0], pads[1]), tuple(dilations),
                              int(_attr(node, "group", 1))), label)]


def _conv_pads(node: Any, size: tuple[int, ...], kernel: tuple[int, int], strides: list[int],
               dilations: list[int]) -> list[int]:
    """[top, left, bottom, right] from `pads` or `auto_pad` (SAME_*: the padding that keeps ceil(size/stride))."""
    auto = _attr(node, "auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = [int(p) for p in _attr(node, "pads", [0, 0, 0, 0])]
        return pads if len(pads) == 4 else [0, 0, 0, 0]
    if auto == "VALID":
        return [0, 0, 0, 0]
    begin, end = [], []
    for n, k, s, d in zip(size, kernel, strides, dilations):
        total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto == "SAME_UPPER" else large)
        end.append(large if auto == "SAME_UPPER" else small)
    return begin + end


def _gemm(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch
    import torch.nn.functional as F

    a_name, w_name = node.input[0], node.input[1]
    c_name = node.input[2] if len(node.input) > 2 else ""
    a = b.tensor(a_name)
    if int(_attr(node, "transA", 0)):
        a = b.call(torch.permute, (a, (1, 0)), f"{label}.transA")
    trans_b = int(_attr(node, "transB", 0))
    if not b.is_const(w_name):  # a product of two activations
        w = b.tensor(w_name)
        if trans_b:
            w = b.call(torch.permute, (w, (1, 0)), f"{label}.transB")
        out = b.call(torch.matmul, (a, w), label)
        if c_name:
            out = b.call(torch.add, (out, b.operand(c_name)), f"{label}.bias")
    else:
        ws = b.shape_of(w_name)
        n = ws[0] if trans_b else ws[1]
        bias = None
        if c_name:
            cs = b.shape_of(c_name)
            if math.prod(cs) != n:
                raise _Untranslatable(f"C of shape {cs} is not a bias of {n} elements")
            bias = _weight_node(b, c_name, (n,))
        weight = _weight_node(b, w_name, (ws[0], ws[1]) if trans_b else (ws[1], ws[0]))
        out = b.call(F.linear, (a, weight, bias), label)
    alpha = float(_attr(node, "alpha", 1.0))
    if alpha != 1.0:
        out = b.call(torch.mul, (out, alpha), f"{label}.alpha")
    return [out]


def _weight_node(b: _Builder, name: str, shape: tuple[int, ...]) -> Any:
    """A get_attr node of constant `name` seen with `shape` (a Gemm's B transposed as F.linear holds it)."""
    import torch

    key = f"{name}#{'x'.join(map(str, shape))}"
    if key not in b.values:
        node = b.graph.get_attr(_fx_name(key))
        with b.mode:
            node.meta["val"] = torch.empty(shape)
        b.values[key] = node
    return b.values[key]


def _matmul(b: _Builder, node: Any, label: str) -> list[Any]:
    """MatMul; by a constant 2-d weight it is a linear layer, with the bias its only user adds (exporters write
    nn.Linear on a 3-d input as MatMul then Add)."""
    import torch
    import torch.nn.functional as F

    x_name, w_name = node.input
    if not (b.is_const(w_name) and len(b.shape_of(w_name)) == 2):
        return [b.call(torch.matmul, (b.tensor(x_name), b.tensor(w_name)), label)]
    k, n = b.shape_of(w_name)
    out = node.output[0]
    bias, add = None, None
    users = b.users.get(out, [])
    if len(users) == 1 and users[0].op_type == "Add" and out not in b.outputs:
        other = [i for i in users[0].input if i != out]
        if len(other) == 1 and b.is_const(other[0]) and b.shape_of(other[0])[-1:] == (n,) and math.prod(
                b.shape_of(other[0])) == n:
            bias, add = _weight_node(b, other[0], (n,)), users[0]
    result = b.call(F.linear, (b.tensor(x_name), _weight_node(b, w_name, (n, k)), bias), label)
    if add is not None:  # the Add is the linear's bias: its output is the linear's
        b.skipped.add(id(add))
        b.values[add.output[0]] = result
    return [result]


def _elementwise(fn: Callable[..., Any]) -> Callable[[_Builder, Any, str], list[Any]]:
    def translate(b: _Builder, node: Any, label: str) -> list[Any]:
        args = tuple(b.operand(i) for i in node.input if i)
        if not any(_is_fx_node(a) for a in args):
            raise _Untranslatable("no tensor operand")
        return [b.call(fn, args, label)]
    return translate


def _clip(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch

    low = _attr(node, "min", None)
    high = _attr(node, "max", None)
    if len(node.input) > 1 and node.input[1]:
        low = float(b.const(node.input[1]).reshape(())) if b.is_const(node.input[1]) else None
    if len(node.input) > 2 and node.input[2]:
        high = float(b.const(node.input[2]).reshape(())) if b.is_const(node.input[2]) else None
    return [b.call(torch.clamp, (b.tensor(node.input[0]), low, high), label)]


def _softmax(fn: Callable[..., Any]) -> Callable[[_Builder, Any, str], list[Any]]:
    def translate(b: _Builder, node: Any, label: str) -> list[Any]:
        x = node.input[0]
        rank = len(b.shape_of(x))
        axis = _axis(int(_attr(node, "axis", -1)), rank)
        if axis != rank - 1:
            raise _Untranslatable(f"a {node.op_type} over axis {axis}, not the last")
        return [b.call(fn, (b.tensor(x), -1), label)]
    return translate


def _layer_norm(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch.nn.functional as F

    x = node.input[0]
    shape = b.shape_of(x)
    axis = _axis(int(_attr(node, "axis", -1)), len(shape))
    weight = b.tensor(node.input[1]) if len(node.input) > 1 and node.input[1] else None
    bias = b.tensor(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    return [b.call(F.layer_norm, (b.tensor(x), tuple(shape[axis:]), weight, bias,
                                  float(_attr(node, "epsilon", 1e-5))), label)]


def _batch_norm(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch.nn.functional as F

    x, scale, bias, mean, var = (b.tensor(i) for i in node.input[:5])
    return [b.call(F.batch_norm, (x, mean, var, scale, bias, False, 0.0, float(_attr(node, "epsilon", 1e-5))),
                   label)]


def _pool(fn: Callable[..., Any]) -> Callable[[_Builder, Any, str], list[Any]]:
    def translate(b: _Builder, node: Any, label: str) -> list[Any]:
        xs = b.shape_of(node.input[0])
        if len(xs) != 4:
            raise _Untranslatable(f"a {len(xs) - 2}-d pooling (only 2-d is modelled)")
        kernel = [int(k) for k in _attr(node, "kernel_shape", [1, 1])]
        strides = [int(s) for s in _attr(node, "strides", [1, 1])]
        dilations = [int(d) for d in _attr(node, "dilations", [1, 1])]
        pads = _conv_pads(node, xs[2:], (kernel[0], kernel[1]), strides, dilations)
        if pads[0] != pads[2] or pads[1] != pads[3]:
            raise _Untranslatable(f"asymmetric padding {pads}")
        ceil = bool(_attr(node, "ceil_mode", 0))
        args: tuple[Any, ...] = (b.tensor(node.input[0]), tuple(kernel), tuple(strides), (pads[0], pads[1]))
        if fn.__name__ == "max_pool2d":
            args += (tuple(dilations), ceil)
        else:
            args += (ceil, bool(_attr(node, "count_include_pad", 0)))
        return [b.call(fn, args, label)]
    return translate


def _global_pool(fn: Callable[..., Any]) -> Callable[[_Builder, Any, str], list[Any]]:
    def translate(b: _Builder, node: Any, label: str) -> list[Any]:
        if len(b.shape_of(node.input[0])) != 4:
            raise _Untranslatable("a global pooling of a tensor that is not (N, C, H, W)")
        return [b.call(fn, (b.tensor(node.input[0]), 1), label)]
    return translate


def _reduce(fn: Callable[..., Any]) -> Callable[[_Builder, Any, str], list[Any]]:
    def translate(b: _Builder, node: Any, label: str) -> list[Any]:
        rank = len(b.shape_of(node.input[0]))
        axes = _ints_of(b, node, "axes", 1)
        if not axes:
            if int(_attr(node, "noop_with_empty_axes", 0)):
                return [b.tensor(node.input[0])]
            axes = list(range(rank))
        dims = tuple(sorted(_axis(a, rank) for a in axes))
        return [b.call(fn, (b.tensor(node.input[0]), dims, bool(_attr(node, "keepdims", 1))), label)]
    return translate


def _concat(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch

    rank = len(b.shape_of(node.input[0]))
    return [b.call(torch.cat, ([b.tensor(i) for i in node.input if i],), label,
                   {"dim": _axis(int(_attr(node, "axis", 0)), rank)})]


# views: they move no data (the importer looks through them to the producer)
def _reshape(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch

    shape = b.shape_of(node.input[0])
    if not b.is_const(node.input[1]):
        raise _Untranslatable("its target shape is computed from values dsasim does not know")
    target = [int(v) for v in b.const(node.input[1]).reshape(-1)]
    if not int(_attr(node, "allowzero", 0)):
        target = [shape[i] if v == 0 and i < len(shape) else v for i, v in enumerate(target)]
    return [b.call(torch.reshape, (b.tensor(node.input[0]), tuple(target)), label)]


def _flatten(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch

    shape = b.shape_of(node.input[0])
    axis = _axis(int(_attr(node, "axis", 1)), len(shape) + 1) if shape else 0
    return [b.call(torch.reshape, (b.tensor(node.input[0]), (math.prod(shape[:axis]), math.prod(shape[axis:]))),
                   label)]


def _transpose(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch

    rank = len(b.shape_of(node.input[0]))
    perm = _attr(node, "perm", None)
    perm = tuple(int(p) for p in perm) if perm is not None else tuple(reversed(range(rank)))
    return [b.call(torch.permute, (b.tensor(node.input[0]), perm), label)]


def _squeeze_shape(b: _Builder, node: Any) -> tuple[int, ...]:
    shape = b.shape_of(node.input[0])
    axes = _ints_of(b, node, "axes", 1)
    if node.op_type == "Squeeze":
        gone = {_axis(a, len(shape)) for a in axes} if axes else {i for i, d in enumerate(shape) if d == 1}
        return tuple(d for i, d in enumerate(shape) if i not in gone)
    if axes is None:
        raise ValueError("Unsqueeze needs axes")
    rank = len(shape) + len(axes)
    added = {_axis(a, rank) for a in axes}
    rest = iter(shape)
    return tuple(1 if i in added else next(rest) for i in range(rank))


def _squeeze(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch

    return [b.call(torch.reshape, (b.tensor(node.input[0]), _squeeze_shape(b, node)), label)]


def _expand(b: _Builder, node: Any, label: str) -> list[Any]:
    import numpy as np
    import torch

    if not b.is_const(node.input[1]):
        raise _Untranslatable("its target shape is computed from values dsasim does not know")
    shape = b.shape_of(node.input[0])
    target = tuple(int(v) for v in b.const(node.input[1]).reshape(-1))
    full = np.broadcast_shapes(shape, target)
    return [b.call(torch.Tensor.expand, (b.tensor(node.input[0]), tuple(int(d) for d in full)), label)]


def _slice_index(b: _Builder, node: Any) -> tuple[Any, ...]:
    """The getitem index of a Slice: one slice per axis."""
    shape = b.shape_of(node.input[0])
    starts = _ints_of(b, node, "starts", 1) or []
    ends = _ints_of(b, node, "ends", 2) or []
    axes = _ints_of(b, node, "axes", 3) or list(range(len(starts)))
    steps = _ints_of(b, node, "steps", 4) or [1] * len(starts)
    index: list[Any] = [slice(None)] * len(shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step < 1:
            raise _Untranslatable(f"a slice with step {step}")
        size = shape[_axis(axis, len(shape))]
        index[_axis(axis, len(shape))] = slice(max(min(start, size), -size), max(min(end, size), -size - 1), step)
    return tuple(index)


def _slice(b: _Builder, node: Any, label: str) -> list[Any]:
    return [b.call(operator.getitem, (b.tensor(node.input[0]), _slice_index(b, node)), label)]


def _split(b: _Builder, node: Any, label: str) -> list[Any]:
    shape = b.shape_of(node.input[0])
    axis = _axis(int(_attr(node, "axis", 0)), len(shape))
    sizes = _ints_of(b, node, "split", 1)
    if sizes is None:
        count = len(node.output)
        sizes = [math.ceil(shape[axis] / count)] * (count - 1)
        sizes.append(shape[axis] - sum(sizes))
    outs, start = [], 0
    for i, size in enumerate(sizes):
        index = [slice(None)] * len(shape)
        index[axis] = slice(start, start + size)
        outs.append(b.call(operator.getitem, (b.tensor(node.input[0]), tuple(index)), f"{label}.{i}"))
        start += size
    return outs


def _gather(b: _Builder, node: Any, label: str) -> list[Any]:
    import torch.nn.functional as F

    data, indices = node.input[0], node.input[1]
    axis = int(_attr(node, "axis", 0))
    if b.is_const(indices):  # picking along an axis: a view
        shape = b.shape_of(data)
        index: list[Any] = [slice(None)] * len(shape)
        value = b.const(indices)
        index[_axis(axis, len(shape))] = int(value) if value.ndim == 0 else [int(v) for v in value.reshape(-1)]
        if value.ndim > 1:
            raise _Untranslatable("a gather with a multi-dimensional index")
        return [b.call(operator.getitem, (b.tensor(data), tuple(index)), label)]
    if b.is_const(data) and axis == 0 and len(b.shape_of(data)) == 2:  # a table looked up: an embedding
        import torch
        ids = b.tensor(indices)
        if ids.meta["val"].dtype not in (torch.int64, torch.int32):
            raise _Untranslatable("a gather whose indices are not integers")
        return [b.call(F.embedding, (ids, b.tensor(data)), label)]
    raise _Untranslatable("a gather of computed indices")


def _alias(b: _Builder, node: Any, label: str) -> list[Any]:
    """Identity, Dropout (inference) and Cast of a tensor: its output is its input."""
    return [b.tensor(node.input[0])] + [None] * (len(node.output) - 1)


def _shape(b: _Builder, node: Any, label: str) -> list[Any]:
    import numpy as np

    shape = b.shape_of(node.input[0])
    start, end = int(_attr(node, "start", 0)), _attr(node, "end", None)
    return [np.array(shape[start:None if end is None else int(end)], dtype=np.int64)]


def _size(b: _Builder, node: Any, label: str) -> list[Any]:
    import numpy as np

    return [np.array(math.prod(b.shape_of(node.input[0])), dtype=np.int64)]


def _constant_of_shape(b: _Builder, node: Any, label: str) -> list[Any]:
    raise _Untranslatable("its shape is computed from values dsasim does not know")


def _translations() -> dict[str, Callable[[_Builder, Any, str], list[Any]]]:
    import torch
    import torch.nn.functional as F

    table: dict[str, Callable[[_Builder, Any, str], list[Any]]] = {
        "Conv": _conv, "Gemm": _gemm, "MatMul": _matmul, "Clip": _clip,
        "Softmax": _softmax(torch.softmax), "LogSoftmax": _softmax(torch.log_softmax),
        "LayerNormalization": _layer_norm, "BatchNormalization": _batch_norm,
        "MaxPool": _pool(F.max_pool2d), "AveragePool": _pool(F.avg_pool2d),
        "GlobalAveragePool": _global_pool(F.adaptive_avg_pool2d),
        "GlobalMaxPool": _global_pool(F.adaptive_max_pool2d),
        "ReduceMean": _reduce(torch.mean), "ReduceSum": _reduce(torch.sum), "ReduceMax": _reduce(torch.amax),
        "ReduceMin": _reduce(torch.amin), "Concat": _concat,
        "Reshape": _reshape, "Flatten": _flatten, "Transpose": _transpose, "Squeeze": _squeeze,
        "Unsqueeze": _squeeze, "Expand": _expand, "Slice": _slice, "Split": _split, "Gather": _gather,
        "Identity": _alias, "Dropout": _alias, "Cast": _alias, "Shape": _shape, "Size": _size,
        "ConstantOfShape": _constant_of_shape,
    }
    unary = {"Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Erf": torch.erf,
             "Sqrt": torch.sqrt, "Exp": torch.exp, "Log": torch.log, "Neg": torch.neg, "Abs": torch.abs,
             "Gelu": F.gelu, "LeakyRelu": F.leaky_relu, "Elu": F.elu, "HardSigmoid": F.hardsigmoid,
             "HardSwish": F.hardswish}
    binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow,
              "Max": torch.maximum, "Min": torch.minimum, "Where": torch.where}
    for op, fn in {**unary, **binary}.items():
        table[op] = _elementwise(fn)
    return table


# ----------------------------------------------------------------------- constants (shape arithmetic)
def _const_ops() -> dict[str, Callable[[_Builder, Any], list[Any]]]:
    """Ops evaluated here when every input is a known constant: the shape arithmetic exporters write."""
    import numpy as np

    def inputs(b: _Builder, node: Any) -> list[Any]:
        return [b.const(i) if i else None for i in node.input]

    def binary(fn: Callable[[Any, Any], Any]) -> Callable[[_Builder, Any], list[Any]]:
        return lambda b, node: [np.asarray(fn(*inputs(b, node)[:2]))]

    def divide(x: Any, y: Any) -> Any:
        if np.issubdtype(np.asarray(x).dtype, np.integer) and np.issubdtype(np.asarray(y).dtype, np.integer):
            return np.trunc(np.asarray(x) / np.asarray(y)).astype(np.result_type(x, y))
        return np.asarray(x) / np.asarray(y)

    def constant(b: _Builder, node: Any) -> list[Any]:
        from onnx import numpy_helper
        for a in node.attribute:
            if a.name == "value":
                return [numpy_helper.to_array(a.t)]
            if a.name in ("value_int", "value_float"):
                return [np.array(_attr(node, a.name, 0))]
            if a.name in ("value_ints", "value_floats"):
                return [np.array(_attr(node, a.name, []))]
        raise _Untranslatable("a Constant without a value")

    def gather(b: _Builder, node: Any) -> list[Any]:
        data, idx = inputs(b, node)[:2]
        return [np.take(data, idx, axis=int(_attr(node, "axis", 0)))]

    def unsqueeze(b: _Builder, node: Any) -> list[Any]:
        x = inputs(b, node)[0]
        return [x.reshape(_squeeze_shape(b, node))]

    def concat(b: _Builder, node: Any) -> list[Any]:
        return [np.concatenate([v.reshape(-1) if v.ndim == 0 else v for v in inputs(b, node) if v is not None],
                               axis=int(_attr(node, "axis", 0)))]

    def slice_(b: _Builder, node: Any) -> list[Any]:
        return [inputs(b, node)[0][_slice_index(b, node)]]

    def cast(b: _Builder, node: Any) -> list[Any]:
        from onnx import helper
        return [inputs(b, node)[0].astype(helper.tensor_dtype_to_np_dtype(int(_attr(node, "to", 1))))]

    def reshape(b: _Builder, node: Any) -> list[Any]:
        x, shape = inputs(b, node)[:2]
        target = [x.shape[i] if v == 0 and i < x.ndim else int(v) for i, v in enumerate(shape.reshape(-1))]
        return [x.reshape(target)]

    def transpose(b: _Builder, node: Any) -> list[Any]:
        perm = _attr(node, "perm", None)
        return [np.transpose(inputs(b, node)[0], perm)]

    def constant_of_shape(b: _Builder, node: Any) -> list[Any]:
        from onnx import numpy_helper
        value = _attr(node, "value", None)
        fill = numpy_helper.to_array(value) if value is not None else np.zeros(1, dtype=np.float32)
        return [np.full([int(v) for v in inputs(b, node)[0].reshape(-1)], fill.reshape(-1)[0], dtype=fill.dtype)]

    def range_(b: _Builder, node: Any) -> list[Any]:
        start, limit, delta = (v.reshape(()) for v in inputs(b, node)[:3])
        return [np.arange(start, limit, delta)]

    return {
        "Constant": constant, "Identity": lambda b, node: [inputs(b, node)[0]], "Gather": gather,
        "Unsqueeze": unsqueeze, "Squeeze": unsqueeze, "Concat": concat, "Slice": slice_, "Cast": cast,
        "Reshape": reshape, "Transpose": transpose, "ConstantOfShape": constant_of_shape, "Range": range_,
        "Add": binary(np.add), "Sub": binary(np.subtract), "Mul": binary(np.multiply), "Div": binary(divide),
        "Equal": binary(np.equal), "Max": binary(np.maximum), "Min": binary(np.minimum),
        "Where": lambda b, node: [np.where(*inputs(b, node)[:3])],
        "Neg": lambda b, node: [np.negative(inputs(b, node)[0])],
        "Sqrt": lambda b, node: [np.sqrt(inputs(b, node)[0])],
        "Shape": lambda b, node: [np.array(inputs(b, node)[0].shape, dtype=np.int64)],
    }


_TRANSLATIONS = _translations()
_CONST_OPS = _const_ops()
ONNX_TRANSLATED_OPS: tuple[str, ...] = tuple(sorted(set(_TRANSLATIONS) | set(_CONST_OPS)))
