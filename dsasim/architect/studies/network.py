"""Whole networks: a `torch.nn.Module` plus an example input read through `torch.fx` into the layers dsasim models.

`import_network(module, input_shape, name)` traces the module symbolically (`torch.fx.symbolic_trace`; where fx
cannot trace it, `torch.export.export`), propagates shapes with fake tensors (no weights are read, no data is
computed) and turns every node into at most one `NetworkLayer`:

- **tensorcore** layers, searched like any single layer: conv2d (stride, padding, dilation, groups: a
  `ConvProblem`) and linear / matmul / bmm / mm (a `MatmulProblem`; a batched product with its own operands per
  batch element is `count` independent problems, a product with a shared 2-d weight folds the batch into m).
- **vector** layers, streaming work on the vector unit: elementwise ops with two tensor operands (residual adds),
  pooling, normalisation, softmax, reductions, concatenation. Each reads its tensor operands from DDR and writes its
  result (compulsory traffic: nothing to reuse), and costs `vector_ops` lane operations: one per element read
  (pooling: one per window tap), three per element for normalisation and softmax (statistics, then normalise).
- an add or a product of two same-shape tensors (a residual add; SwiGLU's gating silu(a) * b) whose first operand
  a tensorcore layer produced and nothing else uses runs on that layer's output tile, the other operand loaded.
- a layer's **bias** (Linear, conv, F.linear, addmm) is loaded once (`bias_elements`) and added on its output tile.
- **fused** nodes, not layers of their own: an inference batch norm on a conv's own output is folded into the conv
  (its scale into the weights, its shift into the bias; elsewhere, e.g. after a relu, it is a vector layer), and
  an activation or a scalar op (relu, gelu, x / 8, ...) whose only input is a tensorcore
  layer's result used nowhere else is applied to that layer's output tile on chip before it is stored (its lane
  operations are the layer's `epilogue_ops`; no DDR traffic); the same for a vector layer's result (the relu
  after a residual add adds to the add's `vector_ops`). The layer lists them in `fused`.
- **attention** (`F.scaled_dot_product_attention`, `nn.MultiheadAttention`, and the hand-written matmul ->
  softmax -> matmul of a BERT layer) becomes its unfused layers per (batch, key/value head): S = Q·Kᵀ (a matmul,
  `count` = b·hkv, the scale 1/√d, a mask's add or a causal mask's select fused on S: one lane operation per score
  each; a mask tensor loaded), P = softmax(S) (a vector layer reading and writing S, as the norms count it) and
  O = P·V (a matmul), grouped as one `NetworkAttention` the network records (its shape and member layers), so that
  an attention target can replace the group. Query heads that share a key/value head (grouped-query attention:
  `enable_gqa`, or K and V `repeat_interleave`d, which moves no data here) stack into the matmuls' m, so each K and
  V is read once per group, as a GQA kernel reads it. `nn.MultiheadAttention` adds its input projections (three
  linear layers with their biases) and its output projection.
- hand-written **RMSNorm** and rotate-half **RoPE** are one vector layer each (`network_patterns`).
- **KV-cache append** (`kv_cache_append(cache, new)` of the LLM presets, `network_models`): the new rows are stored
  into the cache by the layer that produced them (no copy of the cache is counted); the attention reads the whole
  cache through its K and V operands.
- views (view, reshape, flatten, permute, transpose, contiguous, dropout, identity, size, getitem) and arithmetic
  on sizes (no tensor in or out) move no data here: the consumer reads the producer's tensor through them.
- anything else is an **unmodelled** layer, listed by name with the op it calls; the report counts it and never
  drops it silently.

Tensor sizes are in elements; the evaluation (`dsasim.architect.studies.network_eval`) turns them into bytes with the
hardware's word size. With `fusion` (the default), `evaluate_network` also searches each chain the
network holds (`find_chains`) fused, layer by layer and every split between, as `search_chain` does.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from dsasim.architect.nests.loopnest import ConvProblem, MatmulProblem, Problem
from dsasim.architect.studies.network_sources import NetworkSource, first_source
from dsasim.util import is_ascii_whole

__all__ = ["NETWORK_SOURCES", "Network", "NetworkAttention", "NetworkChain", "NetworkImportError", "NetworkLayer",
           "fused_attentions", "import_network", "load_network", "network_from_graph", "source_for", "WEIGHTS",
           "KV_CACHE", "ACTIVATIONS"]

TENSORCORE, VECTOR, UNMODELLED, CHAIN = "tensorcore", "vector", "unmodelled", "chain"
ATTENTION = "attention"  # an attention group evaluated as one fused entry (network_eval)

# canonical op names (fx function/method names, aten schema names and module classes all map onto these)
_VIEWS = {"view", "reshape", "flatten", "permute", "transpose", "contiguous", "unsqueeze", "squeeze", "expand",
          "size", "getitem", "dropout", "identity", "t", "_unsafe_view", "alias", "detach", "to", "type_as",
          "feature_dropout", "alpha_dropout", "dim", "getattr", "unflatten", "view_as", "expand_as", "clone",
          # a K or V repeated per query head of its group (GQA written by hand): the attention reads the group's
          "repeat_interleave"}
_ELEMENTWISE = {"add", "sub", "mul", "div", "truediv", "floordiv", "neg", "relu", "relu6", "gelu", "silu",
                "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "exp", "log", "pow",
                "sqrt", "rsqrt", "abs", "clamp", "clamp_min", "clamp_max", "where", "erf", "square", "iadd", "imul",
                "add_", "mul_", "relu_", "hardtanh_", "masked_fill", "rsub", "minimum", "maximum"}
_NORMS = {"batch_norm", "layer_norm", "group_norm", "instance_norm", "softmax", "log_softmax", "_softmax",
          "native_layer_norm", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit", "rms_norm"}
_POOLS = {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "max_pool2d_with_indices"}
_REDUCTIONS = {"mean", "sum", "amax", "amin", "max", "min", "cat", "concat", "stack"}
_MATMULS = {"matmul", "bmm", "mm", "linear", "addmm"}
_ACTIVATIONS = {"relu", "relu6", "hardtanh", "gelu", "silu", "hardswish", "leaky_relu", "elu", "relu_", "hardtanh_",
                "sigmoid", "tanh", "clamp", "clamp_min"}
_RESIDUAL_ADDS = {"add", "iadd", "add_"}
# two same-shape tensors combined on a tensorcore layer's output tile, the other operand loaded: a residual add, or
# SwiGLU's gating product silu(x W_gate) * (x W_up)
_BINARY_EPILOGUES = _RESIDUAL_ADDS | {"mul", "mul_", "imul"}
_INFERENCE_BATCH_NORMS = {"batch_norm", "_native_batch_norm_legit_no_training"}  # the module is traced in eval()
CHAIN_MAX_LAYERS = 3  # a ResNet bottleneck or a MobileNetV2 block; longer runs are cut (the fused space grows fast)
_NORM_OPS_PER_ELEMENT = 3  # statistics (mean/max), then variance/sum of exps, then normalise
_ATTENTIONS = {"scaled_dot_product_attention", "module MultiheadAttention"}
KV_CACHE_APPEND = "kv_cache_append"  # network_models' marker: new K/V rows stored into the cache, not copied
# what a byte of traffic is (an LLM layer's bytes per token are split by these): a weight (or another parameter,
# a table), the KV cache (the attention's K and V, the rows appended to it) or an activation (the rest)
WEIGHTS, KV_CACHE, ACTIVATIONS = "weights", "kv_cache", "activations"

_MODULE_OPS = {"Conv2d": "conv2d", "Linear": "linear", "BatchNorm1d": "batch_norm", "BatchNorm2d": "batch_norm",
               "LayerNorm": "layer_norm", "GroupNorm": "group_norm", "ReLU": "relu", "ReLU6": "relu6",
               "GELU": "gelu", "SiLU": "silu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Hardtanh": "hardtanh",
               "Hardswish": "hardswish", "Hardsigmoid": "hardsigmoid", "LeakyReLU": "leaky_relu", "ELU": "elu",
               "Softmax": "softmax", "MaxPool2d": "max_pool2d", "AvgPool2d": "avg_pool2d",
               "AdaptiveAvgPool2d": "adaptive_avg_pool2d", "AdaptiveMaxPool2d": "adaptive_max_pool2d",
               "Dropout": "dropout", "Dropout2d": "dropout", "Identity": "identity", "Flatten": "flatten"}


class NetworkImportError(ValueError):
    """A module that cannot be read as a network (neither fx nor torch.export traces it, or the input is wrong)."""


@dataclass(frozen=True)
class NetworkLayer:
    """One layer of a network: what runs, on which unit, and its shapes (sizes in elements)."""

    name: str  # the fx node's module path or name, e.g. layer1.0.conv1
    op: str  # canonical op: conv2d, linear, matmul, add, max_pool2d, ...
    kind: str  # "tensorcore", "vector" or "unmodelled"
    shape: str  # one line: the problem's spec, or input -> output shapes
    problem: Problem | None = None  # tensorcore layers
    count: int = 1  # independent repeats of `problem` (the batch of a bmm)
    read_elements: int = 0  # vector layers: elements read from DDR
    write_elements: int = 0  # vector layers: elements written to DDR
    vector_ops: int = 0  # vector layers: lane operations
    epilogue_ops: int = 0  # tensorcore layers: lane operations of the fused nodes, on the output tile
    extra_read_elements: int = 0  # tensorcore layers: a fused residual add's other operand, loaded from DDR
    bias_elements: int = 0  # tensorcore layers: the bias (a folded batch norm's shift), loaded once, added on chip
    relu: bool = False  # an activation is fused into this layer (a chain applies it on chip)
    fused: tuple[str, ...] = ()  # the nodes folded or fused into this layer
    reason: str = ""  # unmodelled layers: what dsasim does not model
    note: str = ""  # modelled layers: what the model assumes that a reader may not expect (a causal mask's cost)
    # which tensors of the layer's accesses (a matmul's "a", "b", "c"; a vector layer's "output") are weights or
    # the KV cache (`WEIGHTS`, `KV_CACHE`); the rest of its traffic is activations
    roles: tuple[tuple[str, str], ...] = ()
    weight_elements: int = 0  # vector layers: the parameters among read_elements (a norm's weight, RoPE's tables)
    # the data flow (`network_trace` runs the network in one session by it; never in the JSON): per tensor operand
    # of the layer's own node, in argument order, the layer whose result it reads ("" for the network's input or a
    # parameter); the layer a fused residual add's other operand comes from; the shape of the layer's result
    reads: tuple[str, ...] = field(default=(), compare=False)
    skip_read: str = field(default="", compare=False)
    out_shape: tuple[int, ...] | None = field(default=None, compare=False)

    def role_of(self, tensor: str) -> str:
        """`WEIGHTS`, `KV_CACHE` or `ACTIVATIONS`: what `tensor` (an access-count tensor name) of this layer is."""
        return dict(self.roles).get(tensor, ACTIVATIONS)

    def to_json(self) -> dict[str, Any]:
        """The layer's identity as JSON: name, op, kind, shape (and fused / reason where set)."""
        out: dict[str, Any] = {"name": self.name, "op": self.op, "kind": self.kind, "shape": self.shape}
        if self.count != 1:
            out["count"] = self.count
        if self.fused:
            out["fused"] = list(self.fused)
        if self.bias_elements:
            out["bias_elements"] = self.bias_elements
        if self.reason:
            out["reason"] = self.reason
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class NetworkChain:
    """Consecutive conv layers, or a pair of matmuls, (indices into Network.layers) where each feeds only the next:
    a `ConvChain` or `GemmChain` that `search_chain` may fuse. An identity residual (the add of the chain's own
    input) is part of the chain; another skip operand (a projection's output) is loaded by the last layer, and
    every member's bias is loaded once (both in `extra_read_elements`)."""

    members: tuple[int, ...]
    chain: Any  # dsasim.architect.problems.chain.ConvChain or dsasim.architect.search.gemm_chain.GemmChain
    extra_read_elements: int = 0

    @property
    def first(self) -> int:
        return self.members[0]


@dataclass(frozen=True)
class NetworkAttention:
    """One attention block read from the network: O = softmax(Q·Kᵀ/√d [+ mask]) · V per (batch, query head), with
    `hkv` key/value heads (query heads share their group's), as its unfused layers (`members`: indices into
    Network.layers of the scores matmul, the softmax and the output matmul); an attention target can replace the
    group. Sizes in elements: b batch, h query heads, n query length, m key/value length, d head dimension (dv of
    V's heads)."""

    members: tuple[int, int, int]
    b: int
    h: int
    hkv: int
    n: int
    m: int
    d: int
    dv: int
    causal: bool = False
    masked: bool = False  # an attention mask tensor is added to S
    source: str = "scaled_dot_product_attention"  # or "MultiheadAttention", "matmul-softmax-matmul"

    def __post_init__(self) -> None:
        for key in ("b", "h", "hkv", "n", "m", "d", "dv"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"NetworkAttention: {key} must be a whole number >= 1, got {value!r}")
        if self.h % self.hkv:
            raise ValueError(f"NetworkAttention: h ({self.h}) must be a multiple of hkv ({self.hkv})")
        if len(self.members) != 3 or len(set(self.members)) != 3:
            raise ValueError(f"NetworkAttention: members must be 3 distinct layer indices, got {self.members!r}")

    def spec(self) -> str:
        """The block as an attention target's spec: attention:b=..,h=..,hkv=..,n=..,m=..,d=..[,causal=1]."""
        return (f"attention:b={self.b},h={self.h},hkv={self.hkv},n={self.n},m={self.m},d={self.d}"
                + (f",dv={self.dv}" if self.dv != self.d else "") + (",causal=1" if self.causal else ""))

    def problem(self) -> Any:
        """The group as an `AttentionProblem` the attention search takes, or None where it cannot (V's head
        dimension differs from Q's and K's, or the sizes are past the exact-count limit): the group stays
        unfused."""
        from dsasim.architect.problems.attention import AttentionProblem
        if self.dv != self.d:
            return None
        try:
            return AttentionProblem(b=self.b, h=self.h, hkv=self.hkv, n=self.n, m=self.m, d=self.d,
                                    causal=self.causal)
        except ValueError:
            return None

    def to_json(self, network: Network) -> dict[str, Any]:
        """spec, source, whether masked, and the member layers' names."""
        return {"spec": self.spec(), "source": self.source, "masked": self.masked,
                "layers": [network.layers[i].name for i in self.members]}


def fused_attentions(network: Network, fusion: bool) -> dict[int, tuple[NetworkAttention, Any]]:
    """With `fusion`, the attention groups evaluated as one entry, by the index of each member layer: (group, its
    `AttentionProblem`); a group the attention search cannot take is left out (its layers stay)."""
    if not fusion:
        return {}
    out: dict[int, tuple[NetworkAttention, Any]] = {}
    for group in network.attentions:
        problem = group.problem()
        if problem is not None:
            out.update((i, (group, problem)) for i in group.members)
    return out


@dataclass(frozen=True)
class Network:
    """A network as dsasim sees it: its layers in execution order."""

    name: str
    input_shape: tuple[int, ...]
    layers: tuple[NetworkLayer, ...]
    traced_with: str = "torch.fx"  # or "torch.export" (fx could not trace the module)
    ignored_views: int = field(default=0, compare=False)  # view nodes (no data moved)
    chains: tuple[NetworkChain, ...] = ()  # runs of convs a fused schedule may run as one (see find_chains)
    attentions: tuple[NetworkAttention, ...] = ()  # attention blocks, each as its unfused layers
    # tokens one run processes (an LLM layer: prefill batch x sequence, decode the batch), 0: not a token model
    tokens: int = 0
    model_layers: int = 0  # layers of this kind in the whole model (an LLM layer preset's count), 0: unknown

    def layer(self, name: str) -> NetworkLayer:
        """The layer called `name` (KeyError naming a few layers otherwise)."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"{self.name}: no layer {name!r}; layers are e.g. {[x.name for x in self.layers[:5]]}")

    def of_kind(self, kind: str) -> list[NetworkLayer]:
        """The layers of one kind, in order."""
        return [layer for layer in self.layers if layer.kind == kind]

    def distinct_problems(self) -> list[Problem]:
        """The distinct tensorcore problems (by shape), in order of first appearance: each is searched once."""
        seen: dict[Problem, None] = {}
        for layer in self.layers:
            if layer.problem is not None:
                seen.setdefault(layer.problem, None)
        return list(seen)


# ----------------------------------------------------------------------------------------------- tracing
def _trace(module: Any, input_shape: tuple[int, ...]) -> tuple[Any, str]:
    """(graph module with shapes in node.meta, 'torch.fx' or 'torch.export')."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.shape_prop import ShapeProp

    # the example lives where the module's weights do (meta for the presets): fake tensors read no data
    device = next(iter(module.parameters()), next(iter(module.buffers()), torch.empty(0))).device
    fx_error: BaseException | None = None
    try:
        gm = torch.fx.symbolic_trace(module)
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        with mode:
            example = torch.empty(input_shape, device=device)
        ShapeProp(gm, fake_mode=mode).propagate(example)
        return gm, "torch.fx"
    except (Exception, SystemExit) as err:  # fx cannot trace data-dependent control flow: try torch.export
        fx_error = err
    try:
        example = torch.empty(input_shape, device=device)
        exported = torch.export.export(module, (example,))
        return exported.graph_module, "torch.export"
    except (Exception, SystemExit) as err:  # user code's sys.exit included: it never decides dsasim's exit
        fx_said, export_said = _said(fx_error), _said(err)
        said = (f"torch.fx and torch.export both said {fx_said}" if fx_said == export_said else
                f"torch.fx said {fx_said}; torch.export said {export_said}")
        raise NetworkImportError(f"cannot trace the module with input shape {tuple(input_shape)}: {said}") from None


_SAID_CHARS = 200  # an error's first line, cut here: a one-line report, not torch's graph dump


def _said(err: BaseException | None) -> str:
    """'TypeName: first line' of the innermost cause of `err` (ShapeProp wraps the op's own error), cut short."""
    while err is not None and err.__cause__ is not None:
        err = err.__cause__
    if err is None:
        return "nothing"
    text = f"sys.exit({err.code!r})" if isinstance(err, SystemExit) else f"{type(err).__name__}: {_first_line(err)}"
    return text if len(text) <= _SAID_CHARS else text[:_SAID_CHARS - 3] + "..."


def _first_line(err: BaseException | None) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else ""


def _shape(node: Any) -> tuple[int, ...] | None:
    """The node's tensor shape, or None when it is not a tensor (a size, a tuple, a scalar)."""
    meta = node.meta if hasattr(node, "meta") else {}
    tm = meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        return tuple(int(d) for d in tm.shape)
    val = meta.get("val")
    if val is not None and hasattr(val, "shape") and hasattr(val, "dtype"):
        return tuple(int(d) for d in val.shape)
    return None


def _nodes_in(args: Iterable[Any]) -> list[Any]:
    """The fx nodes among (nested) arguments."""
    import torch.fx

    out: list[Any] = []
    for a in args:
        if isinstance(a, torch.fx.Node):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(_nodes_in(a))
        elif isinstance(a, dict):
            out.extend(_nodes_in(a.values()))
    return out


def _op_name(gm: Any, node: Any) -> tuple[str, Any]:
    """(canonical op name, the called module or None)."""
    if node.op == "call_module":
        sub = gm.get_submodule(node.target)
        return _MODULE_OPS.get(type(sub).__name__, f"module {type(sub).__name__}"), sub
    if node.op == "call_method":
        return str(node.target), None
    target = node.target
    schema = getattr(target, "_schema", None)
    if schema is not None:  # an aten OpOverload (torch.export)
        return schema.name.split("::", 1)[-1], None
    if target is operator.getitem:
        return "getitem", None
    name = getattr(target, "__name__", str(target))
    return name, None


def _pair(value: Any) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    a, b = value
    return int(a), int(b)


def _conv_problem(name: str, x: tuple[int, ...], w: tuple[int, ...], stride: Any, padding: Any, dilation: Any,
                  groups: int) -> ConvProblem:
    """The ConvProblem of a conv2d with input shape x and weight shape w."""
    n, ic, h, wd = x
    oc, _, kh, kw = w
    dil = _pair(dilation)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        else:  # "same" (stride 1): the padding that keeps the size, when it is symmetric
            total = (dil[0] * (kh - 1), dil[1] * (kw - 1))
            if any(t % 2 for t in total):
                raise ValueError(f"padding='same' with an even kernel ({kh}x{kw}) pads unevenly")
            padding = (total[0] // 2, total[1] // 2)
    return ConvProblem(n=n, ic=ic, oc=oc, h=h, w=wd, kh=kh, kw=kw, stride=_pair(stride), padding=_pair(padding),
                       dilation=dil, groups=int(groups), name=name)


def _arg(node: Any, index: int, key: str, default: Any) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(key, default)


class _Importer:
    """Walks a traced graph once, building the layers (see the module docstring for the rules)."""

    def __init__(self, gm: Any) -> None:
        self.gm = gm
        self.layers: list[NetworkLayer] = []
        self.producer: dict[Any, int] = {}  # node -> index of the layer whose result it is (through views)
        self.views = 0
        self.view_of: dict[Any, Any] = {}  # a view node -> the node it views
        self.input: dict[int, Any] = {}  # layer index -> the node of its (first) input
        self.result: dict[int, Any] = {}  # layer index -> the last node fused into it (its result)
        self.skip: dict[int, Any] = {}  # layer index -> the other operand of a residual add fused into it
        # conv layers whose result is still the conv's own output (or that of batch norms folded into it): an
        # inference batch norm folds into the weights only there, not after a relu or an add
        self.foldable: set[int] = set()
        self.out_shape: dict[int, tuple[int, ...] | None] = {}  # layer index -> its own node's output shape
        self.attentions: list[NetworkAttention] = []
        self.tuple_outputs: dict[Any, dict[int, int]] = {}  # a node returning a tuple -> item -> its layer index
        # layers one fx node made (a MultiheadAttention's projections): its users are not the layers' own
        self.no_chain: set[int] = set()
        self.operands: dict[int, list[Any]] = {}  # layer index -> the nodes of its own node's tensor operands
        from dsasim.architect.studies.network_patterns import find_patterns
        self.patterns = find_patterns(gm.graph)

    def add(self, node: Any, layer: NetworkLayer, first_input: Any = None) -> None:
        index = len(self.layers)
        self.producer[node] = index
        self.result[index] = node
        self.out_shape[index] = _shape(node)
        if first_input is not None:
            self.input[index] = first_input
        self.layers.append(layer)
        if layer.op == "conv2d" and layer.kind == TENSORCORE:
            self.foldable.add(index)

    def data_flow(self) -> list[NetworkLayer]:
        """The layers with their data flow filled in (`NetworkLayer.reads`, `skip_read`, `out_shape`): an operand
        is the result of the layer that produced it (through views), else "" (an input or a parameter)."""
        def made_by(node: Any) -> str:
            index = self.producer.get(node)
            return "" if index is None else self.layers[index].name

        return [replace(layer, reads=tuple(made_by(n) for n in self.operands.get(i, ())),
                        skip_read=made_by(self.skip[i]) if i in self.skip else "",
                        out_shape=_shape(self.result[i]) if i in self.result else None)
                for i, layer in enumerate(self.layers)]

    def source(self, node: Any) -> Any:
        """The node whose tensor `node` is, looking through views (a view moves no data)."""
        while node in self.view_of:
            node = self.view_of[node]
        return node

    def _chain_kind(self, i: int) -> Any:
        """The `ChainKind` of which layer i may be a chain's layer (its `network_member`: a conv; a single,
        unbatched matmul), else None."""
        from dsasim.architect.search.chain_kinds import CHAIN_KINDS
        return next((kind for kind in CHAIN_KINDS.values() if kind.network_member(self.layers[i])), None)

    def find_chains(self, max_length: int) -> list[NetworkChain]:
        """Runs of conv layers (at most `max_length`; a longer run is cut) or pairs of matmuls (a feed-forward
        pair: x @ W1 -> activation -> @ W2) each of whose results feeds only the next, as a ConvChain or a
        GemmChain; a run ends where the shapes do not connect or the chain's constructor refuses."""
        runs: list[list[int]] = []
        # the attention target's layers and a MultiheadAttention's projections are no chain's
        attending = {i for group in self.attentions for i in group.members} | self.no_chain
        for i in range(len(self.layers)):
            kind = self._chain_kind(i)
            if kind is None or i in attending:
                continue
            prev = self.producer.get(self.source(self.input.get(i))) if i in self.input else None
            limit = max_length if kind.max_layers is None else kind.max_layers
            joins = (runs and prev is not None and runs[-1][-1] == prev and self._chain_kind(prev) is kind
                     and prev not in self.skip and len(self.result[prev].users) == 1 and len(runs[-1]) < limit)
            if joins:
                runs[-1].append(i)
            else:
                runs.append([i])
        chains = []
        for run in runs:
            if len(run) < 2:
                continue
            problems = [self.layers[i].problem for i in run]
            last = run[-1]
            skip = self.skip.get(last)
            identity = skip is not None and self.source(skip) is self.source(self.input[run[0]])
            try:
                chain = self._chain_kind(run[0]).from_layers(problems, [self.layers[i].relu for i in run], identity)
            except ValueError:  # the shapes do not connect, or an identity residual needs stride 1
                continue
            if chain is None:  # the kind's layers do not connect (two matmuls whose shapes do not chain)
                continue
            identity = chain.residual  # a kind without residuals leaves the add to the network
            extra = (0 if identity else self.layers[last].extra_read_elements) + sum(
                self.layers[i].bias_elements for i in run)  # the chain's search knows no bias: loaded beside it
            chains.append(NetworkChain(members=tuple(run), chain=chain, extra_read_elements=extra))
        return chains

    def fusable(self, src: Any, kinds: tuple[str, ...] = (TENSORCORE, VECTOR)) -> int | None:
        """The layer (of one of `kinds`) whose result `src` is, when nothing else uses it: an epilogue can then
        work on that layer's output tile on chip, before it is stored."""
        index = self.producer.get(src)
        if index is None or self.layers[index].kind not in kinds or len(src.users) != 1:
            return None
        return index

    def fuse(self, node: Any, index: int, ops: int, label: str, relu: bool = False, extra_read: int = 0) -> None:
        """Node `label` applied to layer `index`'s output tile: `ops` lane operations, no DDR traffic but
        `extra_read` elements of another operand loaded (a residual add)."""
        layer = self.layers[index]
        if layer.kind == TENSORCORE:
            layer = replace(layer, epilogue_ops=layer.epilogue_ops + ops, fused=layer.fused + (label,),
                            relu=layer.relu or relu, extra_read_elements=layer.extra_read_elements + extra_read)
        else:
            layer = replace(layer, vector_ops=layer.vector_ops + ops, fused=layer.fused + (label,))
        self.layers[index] = layer
        self.producer[node] = index
        self.result[index] = node
        self.foldable.discard(index)  # its result is no longer the conv's own output

    def fold_batch_norm(self, node: Any, index: int, label: str) -> None:
        """An inference batch norm on conv layer `index`'s own output: its scale folds into the weights (no work),
        its shift into the bias (one per output channel: loaded, and added on the output tile, unless the conv
        has a bias already)."""
        layer = self.layers[index]
        problem = layer.problem
        assert isinstance(problem, ConvProblem)
        add_bias = layer.bias_elements == 0
        self.layers[index] = replace(
            layer, fused=layer.fused + (label,), bias_elements=layer.bias_elements or problem.oc,
            epilogue_ops=layer.epilogue_ops + (_conv_output_elements(problem) if add_bias else 0))
        self.producer[node] = index
        self.result[index] = node

    def visit(self, node: Any) -> None:
        if node.op in ("placeholder", "output", "get_attr"):
            return
        op, module = _op_name(self.gm, node)
        out = _shape(node)
        inputs = [(a, _shape(a)) for a in _nodes_in(node.args) + _nodes_in(node.kwargs.values())]
        tensors = [(a, s) for a, s in inputs if s is not None]
        label = str(node.target) if node.op == "call_module" else str(node.name)
        match = self.patterns.get(node)
        if match is not None:  # a pattern's inner node is the pattern's; its root is the pattern's one layer
            if node is match.root:
                self.add(node, self.pattern_layer(match, _pattern_label(match)), match.input)
                self.operands[len(self.layers) - 1] = [match.input, *match.tables]
            return
        if op == "getitem" and inputs and inputs[0][0] in self.tuple_outputs:  # an item of an attention's tuple
            item = self.tuple_outputs[inputs[0][0]].get(node.args[1] if len(node.args) > 1 else None)
            if item is not None:
                self.producer[node] = item
            self.views += 1
            return
        if out is None and not tensors and op not in _ATTENTIONS:  # arithmetic on sizes (x.shape[-1] // 2)
            self.views += 1
            return
        if op in _VIEWS or op.rstrip("_") in _VIEWS:
            self.views += 1
            if tensors:
                self.view_of[node] = tensors[0][0]
                if tensors[0][0] in self.producer:
                    self.producer[node] = self.producer[tensors[0][0]]
            return
        try:
            layer = self.classify(node, op, module, out, tensors, label)
        except (ValueError, TypeError, IndexError) as err:  # a shape our problems cannot express
            layer = NetworkLayer(name=label, op=op, kind=UNMODELLED, shape=_io_shape(tensors, out),
                                 reason=f"{op} with these shapes is not modelled: {err}")
        if layer is not None:
            self.add(node, layer, tensors[0][0] if tensors else None)
            self.operands[len(self.layers) - 1] = [a for a, _ in tensors]
            if layer.op == "matmul" and layer.count > 1:
                self.group_written_attention(len(self.layers) - 1, node, tensors)

    def classify(self, node: Any, op: str, module: Any, out: tuple[int, ...] | None,
                 tensors: list[tuple[Any, tuple[int, ...]]], label: str) -> NetworkLayer | None:
        """The node's layer, or None when it fused into its producer."""
        io = _io_shape(tensors, out)
        if op == "scaled_dot_product_attention":
            return self.sdpa(node, label, tensors, io)
        if op == "module MultiheadAttention":
            return self.multihead_attention(node, module, label, tensors, io)
        if op == KV_CACHE_APPEND:
            return self.kv_cache_append(node, label, tensors, io)
        if op in ("conv2d", "convolution"):
            if module is not None:
                if module.padding_mode != "zeros":
                    return _unmodelled(label, op, io, f"padding_mode={module.padding_mode!r} (only zero padding)")
                prob = _conv_problem(label, tensors[0][1], tuple(module.weight.shape), module.stride,
                                     module.padding, module.dilation, module.groups)
                bias = prob.oc if module.bias is not None else 0
            else:
                if op == "convolution" and (_arg(node, 6, "transposed", False) or len(tensors[0][1]) != 4):
                    return _unmodelled(label, op, io, "a transposed or non-2-d convolution")
                prob = _conv_problem(label, tensors[0][1], tensors[1][1], _arg(node, 3, "stride", 1),
                                     _arg(node, 4, "padding", 0), _arg(node, 5, "dilation", 1),
                                     _arg(node, 8 if op == "convolution" else 6, "groups", 1))
                bias = math.prod(tensors[2][1]) if len(tensors) > 2 else 0  # (input, weight, bias)
            if len(tensors[0][1]) != 4:
                return _unmodelled(label, op, io, "a conv2d whose input is not (N, C, H, W)")
            return NetworkLayer(name=label, op="conv2d", kind=TENSORCORE, shape=prob.spec(), problem=prob,
                                bias_elements=bias, epilogue_ops=_conv_output_elements(prob) if bias else 0)
        if op in _MATMULS:
            return self.matmul(node, op, module, out, tensors, label, io)
        if op in _INFERENCE_BATCH_NORMS and tensors:
            index = self.fusable(tensors[0][0], (TENSORCORE,))
            if index is not None and index in self.foldable:
                self.fold_batch_norm(node, index, label)
                return None
            # elsewhere (after a relu, an add, a pool) it is y = x * scale + shift per channel: a vector layer
            # reading x and the channels' scales and shifts, two lane operations per element
            x = tensors[0][1]
            channels = x[1] if len(x) > 1 else x[0]
            return NetworkLayer(name=label, op="batch_norm", kind=VECTOR, shape=io,
                                read_elements=math.prod(x) + 2 * channels,
                                write_elements=math.prod(out or x), vector_ops=2 * math.prod(x))
        if op in _ELEMENTWISE:
            operands = [t for t in tensors if math.prod(t[1]) > 1 or len(tensors) == 1]
            if len(operands) == 1:
                index = self.fusable(operands[0][0])
                if index is not None:
                    self.fuse(node, index, math.prod(out or operands[0][1]), label, relu=op in _ACTIVATIONS)
                    return None
            if op in _BINARY_EPILOGUES and len(operands) == 2 and operands[0][1] == operands[1][1] == out:
                for mine, other in (operands, operands[::-1]):  # the first operand a tensorcore layer produced
                    index = self.fusable(mine[0], (TENSORCORE,))
                    if index is not None:  # the add runs on that layer's output tile, the skip operand loaded
                        self.fuse(node, index, math.prod(out), label, extra_read=math.prod(other[1]))
                        self.skip[index] = other[0]
                        return None
            return self.vector(label, op, tensors, out, sum(math.prod(s) for _, s in tensors), io)
        if op in _NORMS:
            layer = self.vector(label, op, tensors, out, _NORM_OPS_PER_ELEMENT * math.prod(tensors[0][1]), io)
            # a norm's weight and bias: a module's own, or (F.rms_norm, F.layer_norm, aten) operands after the input
            params = sum(math.prod(s) for n, s in tensors[1:] if n.op == "get_attr")
            if module is not None:  # a norm module's own weight and bias are read too (aten's take them as operands)
                own = sum(p.numel() for p in module.parameters(recurse=False))
                layer = replace(layer, read_elements=layer.read_elements + own)
                params += own
            return replace(layer, weight_elements=params)
        if op in _POOLS:
            window = 1
            if module is not None and hasattr(module, "kernel_size"):
                kh, kw = _pair(module.kernel_size)
                window = kh * kw
            elif op in ("max_pool2d", "avg_pool2d", "max_pool2d_with_indices"):
                kh, kw = _pair(_arg(node, 1, "kernel_size", 1))
                window = kh * kw
            ops = max(math.prod(tensors[0][1]), math.prod(out or ()) * window)
            return self.vector(label, op, tensors[:1], out, ops, io)
        if op in _REDUCTIONS:
            return self.vector(label, op, tensors, out, sum(math.prod(s) for _, s in tensors), io)
        return _unmodelled(label, op, io, f"dsasim does not model {op}")

    def matmul(self, node: Any, op: str, module: Any, out: tuple[int, ...] | None,
               tensors: list[tuple[Any, tuple[int, ...]]], label: str, io: str) -> NetworkLayer:
        bias = 0  # elements of the bias, loaded once and added to the output tile (m * n lane operations)
        if op == "linear" or module is not None:
            x = tensors[0][1]
            if module is not None:
                n, k = module.out_features, module.in_features
                bias = n if module.bias is not None else 0
            else:
                n, k = tensors[1][1]
                bias = math.prod(tensors[2][1]) if len(tensors) > 2 else 0  # F.linear(x, weight, bias)
            m = math.prod(x[:-1])
            prob = MatmulProblem(m=m, n=n, k=k, name=label)
            return NetworkLayer(name=label, op="linear", kind=TENSORCORE, shape=prob.spec(), problem=prob,
                                bias_elements=bias, epilogue_ops=m * n if bias else 0, roles=(("b", WEIGHTS),))
        if op == "addmm":  # (bias, a, b): torch.export's linear
            bias = math.prod(tensors[0][1])
            tensors = tensors[1:]
        a, b = tensors[0][1], tensors[1][1]
        if len(a) < 2 or len(b) < 2:
            return _unmodelled(label, op, io, "a matrix-vector product (an operand is 1-d)")
        m, k = a[-2], a[-1]
        k2, n = b[-2], b[-1]
        if k != k2:
            return _unmodelled(label, op, io, f"inner dimensions differ ({k} and {k2})")
        if len(b) == 2:  # a shared 2-d right operand (a weight): the batch folds into m
            prob = MatmulProblem(m=m * math.prod(a[:-2]), n=n, k=k, name=label)
            weight = self.source(tensors[1][0]).op == "get_attr"
            return NetworkLayer(name=label, op="matmul", kind=TENSORCORE, shape=prob.spec(), problem=prob,
                                bias_elements=bias, epilogue_ops=prob.m * n if bias else 0,
                                roles=(("b", WEIGHTS),) if weight else ())
        batch = math.prod(out[:-2]) if out is not None else max(math.prod(a[:-2]), math.prod(b[:-2]))
        prob = MatmulProblem(m=m, n=n, k=k, name=label)
        shape = prob.spec() + (f" x {batch}" if batch > 1 else "")
        return NetworkLayer(name=label, op="matmul", kind=TENSORCORE, shape=shape, problem=prob, count=batch)

    # ------------------------------------------------------------------------------------------- attention
    def attention(self, node: Any, label: str, q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...],
                  hkv: int, causal: bool, mask: tuple[int, ...] | None, source: str) -> None:
        """The unfused layers of attention over q (..., h, n, d), k (..., hkv, m, d), v (..., hkv, m, dv) (module
        doc), grouped; `node`'s result is the output matmul's."""
        def heads(shape: tuple[int, ...]) -> tuple[int, int]:  # (batch, heads) of a (..., heads, length, dim)
            return (math.prod(shape[:-3]), shape[-3]) if len(shape) >= 3 else (1, 1)

        (b, h), n, d = heads(q), q[-2], q[-1]
        m, dv = k[-2], v[-1]
        if heads(k)[0] != b or heads(v) != heads(k) or v[-2] != m or k[-1] != d or h % hkv:
            raise ValueError(f"q {q}, k {k}, v {v}: batches, lengths or heads do not match (or {h} query heads "
                             f"are not a multiple of {hkv} key/value heads)")
        group, scores = h // hkv, b * h * n * m
        s_prob = MatmulProblem(m=group * n, n=m, k=d, name=f"{label}.scores")
        o_prob = MatmulProblem(m=group * n, n=dv, k=m, name=f"{label}.output")
        count = b * hkv
        per = "per (batch, key/value head), its query heads stacked" if group > 1 else "per (batch, head)"
        mask_elements = math.prod(mask) if mask is not None else 0
        note = (f"causal: the unfused schedule computes all {n}x{m} scores per head and masks them (one select "
                f"per score): no saving" if causal else "")
        base = len(self.layers)
        self.add(node, NetworkLayer(
            name=f"{label}.scores", op="matmul", kind=TENSORCORE, shape=f"{s_prob.spec()} x {count}", problem=s_prob,
            count=count, epilogue_ops=scores * (1 + (mask is not None) + causal), extra_read_elements=mask_elements,
            fused=("scale",) + (("mask",) if mask is not None else ()) + (("causal mask",) if causal else ()),
            note=note or f"S = Q·Kᵀ {per}", roles=(("b", KV_CACHE),)))
        self.add(node, NetworkLayer(
            name=f"{label}.softmax", op="softmax", kind=VECTOR, shape=f"{b}x{h}x{n}x{m} -> {b}x{h}x{n}x{m}",
            read_elements=scores, write_elements=scores, vector_ops=_NORM_OPS_PER_ELEMENT * scores))
        self.add(node, NetworkLayer(
            name=f"{label}.output", op="matmul", kind=TENSORCORE, shape=f"{o_prob.spec()} x {count}", problem=o_prob,
            count=count, note=f"O = P·V {per}", roles=(("b", KV_CACHE),)))
        self.attentions.append(NetworkAttention((base, base + 1, base + 2), b=b, h=h, hkv=hkv, n=n, m=m, d=d,
                                                dv=dv, causal=bool(causal), masked=mask is not None, source=source))

    def kv_heads(self, node: Any, shape: tuple[int, ...]) -> int:
        """The key/value heads of K or V `node`: those before a repeat_interleave over the heads, if any."""
        while node in self.view_of:
            if _op_name(self.gm, node)[0] == "repeat_interleave":
                before = _shape(self.view_of[node])
                if before is not None and len(before) == len(shape) and before[-3] != shape[-3]:
                    return before[-3]
            node = self.view_of[node]
        return shape[-3] if len(shape) >= 3 else 1

    def sdpa(self, node: Any, label: str, tensors: list[tuple[Any, tuple[int, ...]]], io: str) -> NetworkLayer | None:
        """F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)."""
        q, k, v = (_arg(node, i, key, None) for i, key in enumerate(("query", "key", "value")))
        mask = _arg(node, 3, "attn_mask", None)
        shapes = [_shape(x) if x is not None and hasattr(x, "meta") else None for x in (q, k, v)]
        if any(s is None for s in shapes):
            return _unmodelled(label, "scaled_dot_product_attention", io, "q, k or v is not a traced tensor")
        qs, ks, vs = shapes
        causal = bool(_arg(node, 5, "is_causal", False))
        hkv = self.kv_heads(k, ks)
        if len(ks) >= 3 and hkv != ks[-3] and self.kv_heads(v, vs) != hkv:
            raise ValueError("K and V are repeated to different head counts")
        self.attention(node, label, qs, ks, vs, hkv, causal, _shape(mask) if mask is not None else None,
                       "scaled_dot_product_attention")
        return None

    def multihead_attention(self, node: Any, module: Any, label: str, tensors: list[tuple[Any, tuple[int, ...]]],
                            io: str) -> NetworkLayer | None:
        """nn.MultiheadAttention: its input projections, the attention (module doc) and its output projection."""
        q, k, v = (_arg(node, i, key, None) for i, key in enumerate(("query", "key", "value")))
        if module.bias_k is not None or module.add_zero_attn:
            return _unmodelled(label, "MultiheadAttention", io, "add_bias_kv / add_zero_attn append a key row")
        shapes = [_shape(x) if x is not None and hasattr(x, "meta") else None for x in (q, k, v)]
        if any(s is None for s in shapes):
            return _unmodelled(label, "MultiheadAttention", io, "query, key or value is not a traced tensor")
        e, h = module.embed_dim, module.num_heads
        d = e // h

        def batch_len(shape: tuple[int, ...]) -> tuple[int, int]:
            if len(shape) == 2:
                return 1, shape[0]
            return (shape[0], shape[1]) if module.batch_first else (shape[1], shape[0])

        (b, n), (bk, m) = batch_len(shapes[0]), batch_len(shapes[1])
        bias = module.in_proj_bias is not None
        first = len(self.layers)
        for part, x, rows, width in (("q_proj", q, b * n, e), ("k_proj", k, bk * m, module.kdim),
                                     ("v_proj", v, bk * m, module.vdim)):
            prob = MatmulProblem(m=rows, n=e, k=width, name=f"{label}.{part}")
            self.add(node, NetworkLayer(name=f"{label}.{part}", op="linear", kind=TENSORCORE, shape=prob.spec(),
                                        problem=prob, bias_elements=e if bias else 0,
                                        epilogue_ops=rows * e if bias else 0, roles=(("b", WEIGHTS),)), x)
        masks = [_arg(node, i, key, None) for i, key in ((3, "key_padding_mask"), (5, "attn_mask"))]
        mask_shapes = [_shape(x) for x in masks if x is not None and hasattr(x, "meta") and _shape(x) is not None]
        mask = (sum(math.prod(x) for x in mask_shapes),) if mask_shapes else None
        causal = bool(_arg(node, 7, "is_causal", False))
        self.attention(node, label, (b, h, n, d), (b, h, m, d), (b, h, m, d), h, causal, mask, "MultiheadAttention")
        items = {}
        out_bias = module.out_proj.bias is not None
        prob = MatmulProblem(m=b * n, n=e, k=e, name=f"{label}.out_proj")
        self.add(node, NetworkLayer(name=f"{label}.out_proj", op="linear", kind=TENSORCORE, shape=prob.spec(),
                                    problem=prob, bias_elements=e if out_bias else 0,
                                    epilogue_ops=b * n * e if out_bias else 0, roles=(("b", WEIGHTS),)))
        items[0] = len(self.layers) - 1
        weights_used = any(u.op == "call_function" and u.target is operator.getitem and len(u.args) > 1
                           and u.args[1] == 1 and u.users for u in node.users)
        if bool(_arg(node, 4, "need_weights", True)) and weights_used:
            # the head-averaged attention weights it returns: P read again, (b, n, m) written
            self.add(node, NetworkLayer(
                name=f"{label}.weights", op="mean", kind=VECTOR, shape=f"{b}x{h}x{n}x{m} -> {b}x{n}x{m}",
                read_elements=b * h * n * m, write_elements=b * n * m, vector_ops=b * h * n * m))
            items[1] = len(self.layers) - 1
        self.producer[node] = items[0]
        self.tuple_outputs[node] = items
        self.no_chain.update(range(first, len(self.layers)))
        return None

    def group_written_attention(self, index: int, node: Any, tensors: list[tuple[Any, tuple[int, ...]]]) -> None:
        """Batched matmul `index` whose left operand is a softmax (used only here) of another batched matmul's
        result (used only by the softmax): the hand-written attention of a BERT layer, recorded as a group."""
        probs = self.producer.get(self.source(tensors[0][0]))
        if probs is None or self.layers[probs].op not in ("softmax", "_softmax") or probs not in self.input:
            return
        scores = self.producer.get(self.source(self.input[probs]))
        if (scores is None or self.layers[scores].op != "matmul" or self.layers[scores].count <= 1
                or len(self.result[probs].users) != 1 or len(self.result[scores].users) != 1):
            return
        if any(index in g.members or scores in g.members for g in self.attentions):
            return
        q_shape, s_out = self.out_shape.get(scores), self.out_shape.get(index)
        s_prob, o_prob = self.layers[scores].problem, self.layers[index].problem
        if q_shape is None or s_out is None or not isinstance(s_prob, MatmulProblem) or not isinstance(
                o_prob, MatmulProblem) or o_prob.k != s_prob.n:
            return
        b, h = (math.prod(q_shape[:-3]), q_shape[-3]) if len(q_shape) >= 3 else (1, 1)
        if b * h != self.layers[scores].count:
            return
        self.attentions.append(NetworkAttention((scores, probs, index), b=b, h=h, hkv=h, n=s_prob.m, m=s_prob.n,
                                                d=s_prob.k, dv=o_prob.n, source="matmul-softmax-matmul"))

    def kv_cache_append(self, node: Any, label: str, tensors: list[tuple[Any, tuple[int, ...]]],
                        io: str) -> NetworkLayer | None:
        """kv_cache_append(cache, new): the layer that produced `new` stores it into the cache (its result is the
        KV cache's); a `new` no layer produced is copied in (read and written once)."""
        if len(tensors) != 2:
            return _unmodelled(label, KV_CACHE_APPEND, io, "kv_cache_append takes (cache, new rows)")
        new, shape = tensors[1]
        index = self.producer.get(self.source(new))
        if index is None:
            return NetworkLayer(name=label, op=KV_CACHE_APPEND, kind=VECTOR, shape=io,
                                read_elements=math.prod(shape), write_elements=math.prod(shape),
                                roles=(("output", KV_CACHE),))
        layer = self.layers[index]
        written = "c" if layer.kind == TENSORCORE else "output"
        self.layers[index] = replace(layer, fused=layer.fused + (label,), roles=layer.roles + ((written, KV_CACHE),))
        return None

    def pattern_layer(self, match: Any, label: str) -> NetworkLayer:
        """The one vector layer of a matched RMSNorm or RoPE (`network_patterns`)."""
        from dsasim.architect.studies.network_patterns import ROPE_LANE_OPS_PER_2_ELEMENTS

        x = _shape(match.input)
        tables = [_shape(t) for t in match.tables]
        if x is None or any(t is None for t in tables):
            raise ValueError(f"{match.op}: an operand has no traced shape")
        elements, table_elements = math.prod(x), sum(math.prod(t) for t in tables)
        ops = (_NORM_OPS_PER_ELEMENT * elements if match.op == "rms_norm"
               else ROPE_LANE_OPS_PER_2_ELEMENTS * elements // 2)
        shape = ", ".join("x".join(map(str, s)) for s in [x] + tables) + " -> " + "x".join(map(str, x))
        return NetworkLayer(name=label, op=match.op, kind=VECTOR, shape=shape, read_elements=elements + table_elements,
                            write_elements=elements, vector_ops=ops, weight_elements=table_elements,
                            fused=tuple(sorted(str(n.name) for n in match.nodes if n is not match.root)))

    def vector(self, label: str, op: str, tensors: list[tuple[Any, tuple[int, ...]]], out: tuple[int, ...] | None,
               ops: int, io: str) -> NetworkLayer:
        read = sum(math.prod(s) for _, s in tensors)
        return NetworkLayer(name=label, op=op, kind=VECTOR, shape=io, read_elements=read,
                            write_elements=math.prod(out) if out is not None else 0, vector_ops=int(ops))


def _pattern_label(match: Any) -> str:
    """A matched pattern's layer name: the module whose forward wrote it all (e.g. attention_norm), else the op
    and its result node's name (rope_add_1)."""
    paths = {next(reversed(n.meta["nn_module_stack"]), None) if n.meta.get("nn_module_stack") else None
             for n in match.nodes}
    path = paths.pop() if len(paths) == 1 else None
    return str(path) if path else f"{match.op}_{match.root.name}"


def _conv_output_elements(problem: ConvProblem) -> int:
    """Elements of a conv's output: n x oc x oh x ow."""
    return problem.n * problem.oc * problem.oh * problem.ow


def _io_shape(tensors: Sequence[tuple[Any, tuple[int, ...]]], out: tuple[int, ...] | None) -> str:
    ins = ", ".join("x".join(map(str, s)) for _, s in tensors)
    return f"{ins} -> {'x'.join(map(str, out)) if out is not None else '?'}"


def _unmodelled(label: str, op: str, io: str, reason: str) -> NetworkLayer:
    return NetworkLayer(name=label, op=op, kind=UNMODELLED, shape=io, reason=reason)


def import_network(module: Any, input_shape: Sequence[int], name: str | None = None) -> Network:
    """Read `module` with an example input of `input_shape` (elements) into a Network (see the module doc).

    Raises NetworkImportError when neither torch.fx nor torch.export can trace it, ValueError for a bad shape."""
    import torch

    if not isinstance(module, torch.nn.Module):
        raise NetworkImportError(f"a network must be a torch.nn.Module, got {type(module).__name__}")
    shape = tuple(input_shape)
    if not shape or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in shape):
        raise ValueError(f"input shape must be positive integers, e.g. 1,3,224,224; got {input_shape!r}")
    gm, how = _trace(module.eval(), shape)
    return network_from_graph(gm, shape, name or type(module).__name__, how)


def network_from_graph(gm: Any, input_shape: tuple[int, ...], name: str, traced_with: str) -> Network:
    """The Network of a graph whose nodes carry their shapes (`node.meta`): a traced module's, or one another
    front end built (`network_onnx`); `gm` needs `.graph` (and `get_submodule` where it calls modules)."""
    importer = _Importer(gm)
    for node in gm.graph.nodes:
        importer.visit(node)
    return Network(name=name, input_shape=input_shape, layers=tuple(importer.data_flow()),
                   traced_with=traced_with, ignored_views=importer.views,
                   chains=tuple(importer.find_chains(CHAIN_MAX_LAYERS)), attentions=tuple(importer.attentions))


def layer_counts(network: Network) -> Mapping[str, int]:
    """How many layers of each kind the network has."""
    counts = {TENSORCORE: 0, VECTOR: 0, UNMODELLED: 0}
    for layer in network.layers:
        counts[layer.kind] += 1
    return counts


def parse_input_shape(text: str) -> tuple[int, ...]:
    """'1,3,224,224' (or 1x3x224x224) -> (1, 3, 224, 224); ValueError saying the expected form otherwise."""
    parts = [p.strip() for p in text.replace("x", ",").split(",")]
    if not parts or not all(is_ascii_whole(p) and int(p) >= 1 for p in parts):
        raise ValueError(f"input shape {text!r}: give positive integers separated by commas, e.g. 1,3,224,224")
    return tuple(int(p) for p in parts)


def network_names() -> list[str]:
    """The preset networks' names."""
    from dsasim.architect.studies.network_models import PRESETS

    return list(PRESETS)


def load_network(spec: str, input_shape: Sequence[int] | None = None) -> Network:
    """A preset by name, with the parameters it declares (`NetworkPreset.parameters`: bert-base-layer:seq=384,
    llama3-8b-layer:phase=decode,context=4096,batch=8), an ONNX model FILE.onnx, or a user's module
    `MODULE:ATTR` (an nn.Module instance, class or factory; its example input shape from `input_shape`, else from
    an `example_input_shape` attribute of the object or its module) -> Network: the first of `NETWORK_SOURCES`
    that can load `spec` loads it."""
    spec = spec.strip()
    return source_for(spec).load(spec, tuple(input_shape) if input_shape else None)


def source_for(spec: str) -> NetworkSource:
    """The first of `NETWORK_SOURCES` that can load `spec`; ValueError naming what is accepted when none can."""
    source = first_source(NETWORK_SOURCES, spec)
    if source is None:
        raise unknown_network(spec)
    return source


def is_onnx_spec(spec: str) -> bool:
    """Whether `spec` names an ONNX file (FILE.onnx, any case)."""
    return spec.strip().lower().endswith(".onnx")


def load_onnx(spec: str, input_shape: tuple[int, ...] | None) -> Network:
    """An ONNX model FILE.onnx (`network_onnx`) -> Network; each node it does not translate is an unmodelled
    layer with its op type and why (one the import saw no tensor of, its shapes unknown, is added at the end)."""
    from dsasim.architect.studies.network_onnx import OnnxModelError, read_onnx

    try:
        read = read_onnx(spec.strip(), input_shape)
    except OnnxModelError as err:
        raise NetworkImportError(str(err)) from None
    network = network_from_graph(read, read.input_shape, spec.strip(), "onnx")
    named = {name: (op, reason) for name, op, reason in read.untranslated}
    layers = [replace(x, op=named[x.name][0], reason=named[x.name][1]) if x.kind == UNMODELLED and x.name in named
              else x for x in network.layers]
    seen = {x.name for x in layers}
    layers += [NetworkLayer(name=name, op=op, kind=UNMODELLED, shape="?", reason=reason)
               for name, (op, reason) in named.items() if name not in seen]
    return replace(network, layers=tuple(layers))


def is_preset_spec(spec: str) -> bool:
    """Whether `spec` names a preset (its name, then optionally :PARAMETERS)."""
    from dsasim.architect.studies.network_models import PRESETS

    return spec.strip().partition(":")[0] in PRESETS


def load_preset(spec: str, input_shape: tuple[int, ...] | None) -> Network:
    """A preset by name with its parameters (see `load_network`) -> Network."""
    from dsasim.architect.studies.network_models import PRESETS

    spec = spec.strip()
    head, _, tail = spec.partition(":")
    preset = PRESETS[head]
    if tail or (preset.build_with is not None and preset.build_for is None):
        values = preset.parameter_values(spec, tail) if tail else {p.name: p.default for p in preset.parameters}
        if input_shape and preset.build_for is None:  # its parameters decide its shapes
            raise ValueError(f"{spec!r}: preset {head} takes its shapes from its parameters, not --input-shape; "
                             f"e.g. {preset.example()}")
        assert preset.build_with is not None
        module, shape, tokens = preset.build_with(values)
        if input_shape:  # (a preset that also builds for any input shape: the shape given wins, as before)
            shape = tuple(input_shape)
            module, tokens = preset.build_for(shape), shape[0] * shape[1]
            values = {**values, preset.parameters[0].name: shape[1]}
        network = import_network(module, shape, preset.spec_name(values))
        return replace(network, tokens=tokens, model_layers=preset.model_layers)
    shape = tuple(input_shape) if input_shape else preset.input_shape
    module = preset.build_for(shape) if preset.build_for is not None else preset.build()
    name = f"{head}:seq={shape[1]}" if preset.build_for is not None and shape != preset.input_shape else head
    network = import_network(module, shape, name)
    if preset.build_with is not None:  # a layer of a token model (BERT): tokens = batch x sequence
        network = replace(network, tokens=shape[0] * shape[1], model_layers=preset.model_layers)
    return network


def unknown_network(spec: str) -> ValueError:
    """The error for a spec no network source can load: what the sources take, with examples."""
    from dsasim.architect.studies.network_models import PRESETS

    return ValueError(f"unknown network {spec!r}: use a preset ({', '.join(PRESETS)}) or MODULE:ATTR / FILE.py:ATTR "
                      f"naming an nn.Module, e.g. mypkg.models:Net or models.py:Net, or an ONNX model FILE.onnx")


def is_user_module_spec(spec: str) -> bool:
    """Whether `spec` has the form MODULE:ATTR or FILE.py:ATTR (something after the colon)."""
    return bool(spec.strip().partition(":")[2])


def load_user_module(spec: str, input_shape: tuple[int, ...] | None) -> Network:
    """A user's nn.Module `MODULE:ATTR` or `FILE.py:ATTR` (see `load_network`) -> Network."""
    from dsasim.user_code import UserCodeError, load_module, split_spec

    spec = spec.strip()
    try:  # one loader for all user code (schedules too): what its import raises is one line, never an exit
        head, tail = split_spec(spec, "network")
        mod = load_module(head, "network", spec)
    except UserCodeError as err:
        raise NetworkImportError(str(err)) from None
    if not hasattr(mod, tail):
        raise NetworkImportError(f"network {spec!r}: module {head!r} has no attribute {tail!r}")
    obj = getattr(mod, tail)
    module = _make_user_module(spec, tail, obj)
    shape: tuple[int, ...] | None = tuple(input_shape) if input_shape else None
    if shape is None:
        for owner, where in ((obj, f"{head}:{tail}"), (module, f"{head}:{tail}()"), (mod, head)):
            value = getattr(owner, "example_input_shape", None)
            if value is not None:
                shape = _checked_example_shape(spec, where, value)
                break
    if shape is None:
        raise NetworkImportError(f"network {spec!r}: give the example input shape with --input-shape N,C,H,W "
                                 f"(or define example_input_shape in {head})")
    try:
        return import_network(module, shape, spec)
    except NetworkImportError as err:  # (its forward raised while traced): say which network
        raise NetworkImportError(f"network {spec!r}: {err}") from None


# the front ends `load_network` asks, in order (network_sources)
def _is_zigzag_spec(spec: str) -> bool:
    from dsasim.architect.problems.zigzag_workload import is_zigzag_spec

    return is_zigzag_spec(spec)


def _refuse_zigzag(spec: str, input_shape: Sequence[int] | None = None) -> Network:
    """A ZigZag workload is searched layer by layer (it holds no graph): the refusal, with the way to read it."""
    raise NetworkImportError(f"network {spec!r} is a ZigZag workload: dsasim reads its conv and matmul layers one "
                             f"at a time, `dsasim search zigzag:FILE#ID`; for the whole network give its ONNX "
                             f"model or torch module")


NETWORK_SOURCES: tuple[NetworkSource, ...] = (
    NetworkSource("preset", is_preset_spec, load_preset),
    NetworkSource("onnx", is_onnx_spec, load_onnx),
    NetworkSource("zigzag", _is_zigzag_spec, _refuse_zigzag),
    NetworkSource("module", is_user_module_spec, load_user_module),
)


def _what_raised(err: BaseException) -> str:
    """'TypeName: first line of the message' (a SystemExit: 'sys.exit(CODE)'), for a one-line report."""
    if isinstance(err, SystemExit):
        return f"sys.exit({err.code!r})"
    line = _first_line(err)
    return f"{type(err).__name__}: {line}" if line else type(err).__name__


def _make_user_module(spec: str, attr: str, obj: Any) -> Any:
    """`obj` itself when it is an nn.Module, else what calling it with no arguments returns (an nn.Module);
    NetworkImportError saying when it needs arguments, what it raised, or what it returned instead."""
    import inspect

    import torch

    if isinstance(obj, torch.nn.Module):
        return obj
    if not callable(obj):
        raise NetworkImportError(f"network {spec!r}: {attr} is a {type(obj).__name__}, not an nn.Module or a "
                                 f"class or function that makes one")
    try:
        inspect.signature(obj).bind()
    except TypeError as err:  # decided before the call: a TypeError raised inside it is the callee's own error
        raise NetworkImportError(f"network {spec!r}: {attr}() needs arguments ({err}); point at a function that "
                                 f"takes none, or at a module instance") from None
    except ValueError:  # no signature to read (some builtins): the call decides
        pass
    try:
        made = obj()
    except (Exception, SystemExit) as err:  # sys.exit in user code never decides dsasim's exit status
        raise NetworkImportError(f"network {spec!r}: {attr}() raised {_what_raised(err)}; it must return an "
                                 f"nn.Module") from None
    if not isinstance(made, torch.nn.Module):
        raise NetworkImportError(f"network {spec!r}: {attr}() returned a {type(made).__name__}, not an "
                                 f"nn.Module; point at an nn.Module, or a class or function that makes one")
    return made


def _checked_example_shape(spec: str, where: str, value: Any) -> tuple[int, ...]:
    """A user's `example_input_shape`: a tuple or list of positive integers; NetworkImportError otherwise."""
    ok = isinstance(value, (tuple, list)) and len(value) > 0 and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value)
    if not ok:
        raise NetworkImportError(f"network {spec!r}: example_input_shape of {where} is {value!r} (a "
                                 f"{type(value).__name__}); make it a tuple of positive integers, e.g. "
                                 f"(1, 3, 224, 224), or give --input-shape")
    return tuple(value)
