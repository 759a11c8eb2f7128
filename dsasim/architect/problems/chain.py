"""A chain of convolutions that a fused schedule runs without writing the intermediates to DDR.

`ConvChain(layers, relu=..., residual=...)`: layer i + 1 reads layer i's output (same batch, channels and size);
each layer may be followed by a ReLU (applied on chip to what the layer produces: folded, no traffic), and the
chain may end with an identity residual (`output = block(x) + x`, ResNet's and MobileNetV2's skip connection:
the last layer's ReLU then follows the add, as in ResNet). Batch norm and bias fold into the weights at inference
and are not modelled separately.

Tensors of a chain (NCHW; grouped weights as torch's (OC, IC / groups, KH, KW)): `image` (the chain's input),
`weight1` .. `weightL`, `output` (the last layer's output); the intermediates `mid1` .. `mid{L-1}` live on chip.

The built-in chains (ResNet and MobileNetV2 blocks) and the parser of every chain kind live in
`dsasim.architect.problems.chain_catalogue`, above this module and `gemm_chain`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from dsasim.architect.nests.loopnest import ConvProblem
from dsasim.geometry import window_rows

__all__ = ["ConvChain"]


class ConvChain:
    """Convolutions applied one after the other (see the module docstring). Invalid chains raise ValueError naming
    the layer and the reason."""

    def __init__(self, layers: Sequence[ConvProblem], relu: bool | Sequence[bool] = False,
                 residual: bool = False, name: str | None = None) -> None:
        layers = tuple(layers)
        label = f"ConvChain {name!r}" if name else "ConvChain"
        if not layers:
            raise ValueError(f"{label}: a chain needs at least one layer")
        for i, layer in enumerate(layers):
            if not isinstance(layer, ConvProblem):
                raise ValueError(f"{label}: layer {i + 1} is a {type(layer).__name__}; a chain is made of "
                                 f"ConvProblems")
        if isinstance(relu, bool):
            relu = (relu,) * len(layers)
        relu = tuple(relu)
        if len(relu) != len(layers) or not all(isinstance(r, bool) for r in relu):
            raise ValueError(f"{label}: relu must be a bool or one bool per layer ({len(layers)}), got {relu!r}")
        for i, (a, b) in enumerate(zip(layers, layers[1:])):
            produced = (a.n, a.oc, a.oh, a.ow)
            needed = (b.n, b.ic, b.h, b.w)
            if produced != needed:
                raise ValueError(f"{label}: layer {i + 2} ({b.name}) reads an input of n, channels, height, width "
                                 f"{needed}, but layer {i + 1} ({a.name}) produces {produced}; the shapes must "
                                 f"connect")
        for i, layer in enumerate(layers):
            self._check_reads_input(label, i + 1, layer)
        if residual:
            first, last = layers[0], layers[-1]
            if (first.n, first.ic, first.h, first.w) != (last.n, last.oc, last.oh, last.ow):
                raise ValueError(f"{label}: an identity residual adds the input {(first.n, first.ic, first.h, first.w)}"
                                 f" to the output {(last.n, last.oc, last.oh, last.ow)}: they must have the same "
                                 f"shape (a projection shortcut is a layer of its own)")
            for i, layer in enumerate(layers):
                reach = [(k - 1) * d for k, d in zip((layer.kh, layer.kw), layer.dilation)]
                if layer.stride != (1, 1) or any(p > r for p, r in zip(layer.padding, reach)):
                    raise ValueError(f"{label}: layer {i + 1} ({layer.name}) has stride {layer.stride} and padding "
                                     f"{layer.padding}; an identity residual needs stride 1 and 'same' padding in "
                                     f"every layer (so each output tile's input rows hold the residual's rows)")
        self.layers = layers
        self.relu = relu
        self.residual = bool(residual)
        self.name = name or " -> ".join(layer.spec() for layer in layers)

    @staticmethod
    def _check_reads_input(label: str, index: int, layer: ConvProblem) -> None:
        """ValueError when an output row or column of `layer` reads only padding (a fused tile would have no input)."""
        for axis, (dim, out, size, k) in enumerate((("row", layer.oh, layer.h, layer.kh),
                                                    ("column", layer.ow, layer.w, layer.kw))):
            s, p, d = layer.stride[axis], layer.padding[axis], layer.dilation[axis]
            for o in range(out):
                first, stop = window_rows(o, o + 1, 0, k, s, d, p, size)
                if first == stop:
                    raise ValueError(f"{label}: layer {index} ({layer.name}): output {dim} {o} reads only padding "
                                     f"(kernel {k}, dilation {d}, padding {p}, input {size}); a fused chain needs every "
                                     f"output to read the input: reduce the padding")

    # -- shapes --------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.layers)

    @property
    def mid_names(self) -> tuple[str, ...]:
        """The on-chip intermediates, mid1 .. mid{L-1} (mid i is layer i's output)."""
        return tuple(f"mid{i}" for i in range(1, len(self.layers)))

    @property
    def weight_names(self) -> tuple[str, ...]:
        return tuple(f"weight{i}" for i in range(1, len(self.layers) + 1))

    def weight_shape(self, i: int) -> tuple[int, int, int, int]:
        """Layer i's (0-based) weight shape (OC, IC / groups, KH, KW), in elements."""
        layer = self.layers[i]
        return layer.oc, layer.ic // layer.groups, layer.kh, layer.kw

    def level_shape(self, level: int) -> tuple[int, int, int, int]:
        """The NCHW shape of level `level`: 0 the image, i the output of layer i (L: the output)."""
        if level == 0:
            first = self.layers[0]
            return first.n, first.ic, first.h, first.w
        layer = self.layers[level - 1]
        return layer.n, layer.oc, layer.oh, layer.ow

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return self.level_shape(0)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return self.level_shape(len(self.layers))

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the chain computed once (padding taps included, as the TensorCore counts)."""
        return sum(layer.macs for layer in self.layers)

    def touched_image_lines(self, axis: int) -> int:
        """Rows (axis 0) or columns (axis 1) of the image that some output of the chain reads through every layer."""
        last = self.layers[-1]
        lines = set(range(last.oh if axis == 0 else last.ow))
        for layer in reversed(self.layers):
            k, s, d, p = (layer.kh if axis == 0 else layer.kw), layer.stride[axis], layer.dilation[axis], \
                layer.padding[axis]
            size = layer.h if axis == 0 else layer.w
            lines = {o * s + t * d - p for o in lines for t in range(k)} & set(range(size))
        return len(lines)

    def compulsory_bytes(self, word_bytes: int) -> int:
        """The chain's compulsory DDR traffic, in bytes: every image element some output reads through the chain
        and every weight element that meets a real input loaded once, the output stored once; the intermediates
        never touch DDR. No schedule of the chain moves less (fused or not)."""
        from dsasim.architect.model.lower_bounds import touched_elements
        n, c, _, _ = self.input_shape
        elements = n * c * self.touched_image_lines(0) * self.touched_image_lines(1) + math.prod(self.output_shape)
        elements += sum(touched_elements(layer)["weight"] for layer in self.layers)
        return elements * word_bytes

    # -- description -----------------------------------------------------------------------------------------------
    def describe(self) -> str:
        """One line per layer."""
        lines = [f"# {self.name}: {len(self.layers)} layers, input {'x'.join(map(str, self.input_shape))} -> output "
                 f"{'x'.join(map(str, self.output_shape))}" + (" (+ identity residual)" if self.residual else "")]
        for i, (layer, r) in enumerate(zip(self.layers, self.relu)):
            lines.append(f"#   layer {i + 1}: {layer.describe()}" + (", ReLU" if r else ""))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "chain", "name": self.name, "layers": [layer.to_json() for layer in self.layers],
                "relu": list(self.relu), "residual": self.residual}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ConvChain":
        from dsasim.architect.nests.loopnest import problem_from_json
        return cls([problem_from_json(layer) for layer in data["layers"]], data.get("relu", False),
                   data.get("residual", False), name=data.get("name"))

    def spec(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"ConvChain({self.name!r}, {len(self.layers)} layers, residual={self.residual})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ConvChain) and self.relu == other.relu and self.residual == other.residual
                and [layer.spec() for layer in self.layers] == [layer.spec() for layer in other.layers])

    def __hash__(self) -> int:
        return hash((tuple(layer.spec() for layer in self.layers), self.relu, self.residual))

    def reference(self, image: Any, **weights: Any) -> dict[str, Any]:
        """torch's result of the chain (float64 in, as the runner checks)."""
        import torch
        import torch.nn.functional as F
        x = image
        for i, (layer, r) in enumerate(zip(self.layers, self.relu)):
            x = F.conv2d(x, weights[f"weight{i + 1}"], stride=layer.stride, padding=layer.padding,
                         dilation=layer.dilation, groups=layer.groups)
            last = i == len(self.layers) - 1
            if last and self.residual:
                x = x + image
            if r:
                x = torch.relu(x)
        return {"output": x}
