"""The catalogue of chains: the built-in conv-chain presets and the parser of every chain kind (`parse_chain`).

Above both chain kinds (`chain.ConvChain`, `gemm_chain.GemmChain`), so neither imports the other. Presets
(`chain_names()`): `resnet18.layer1.0` (a basic block), `resnet50.res2a` (the bottleneck's main path 1x1 -> 3x3 ->
1x1; its projection shortcut `res2a_branch1` is a layer of its own), `resnet50.res2b` (a bottleneck with an identity
residual), `mobilenetv2.features.N` for N = 1 .. 17 (the inverted residual blocks: 1x1 expand -> 3x3 depthwise ->
1x1 project, with the residual where stride is 1 and channels match; block 1 has no expansion); and GEMM chains
`gemm-chain:m=..,n=..,k=..,l=..[,relu=1]`.
"""

from __future__ import annotations

from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.search.gemm_chain import GemmChain, parse_gemm_chain
from dsasim.architect.nests.loopnest import ConvProblem
from dsasim.util import is_ascii_whole

__all__ = ["chain_names", "is_chain", "parse_chain", "MOBILENETV2_BLOCKS"]


# ----------------------------------------------------------------------------------------------------- presets
# MobileNetV2 (Sandler et al., 2018), Table 2: (expansion t, output channels c, repeats n, stride s) after the stem
# (a 3x3 stride-2 conv to 32 channels at 112 x 112 for a 224 x 224 input)
_MOBILENETV2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))


def _mobilenetv2_blocks() -> list[tuple[int, int, int, int, int]]:
    """features.1 .. features.17 as (input channels, expansion, output channels, stride, input size)."""
    blocks, cin, size = [], 32, 112
    for t, c, n, s in _MOBILENETV2:
        for i in range(n):
            stride = s if i == 0 else 1
            blocks.append((cin, t, c, stride, size))
            size = (size + 2 - 3) // stride + 1
            cin = c
    return blocks


MOBILENETV2_BLOCKS = _mobilenetv2_blocks()


def _mobilenetv2(index: int) -> ConvChain:
    cin, t, cout, stride, size = MOBILENETV2_BLOCKS[index - 1]
    name = f"mobilenetv2.features.{index}"
    hidden = cin * t
    layers, relu = [], []
    if t != 1:
        layers.append(ConvProblem(1, cin, hidden, size, size, 1, name=f"{name}.expand"))
        relu.append(True)
    layers.append(ConvProblem(1, hidden, hidden, size, size, 3, stride=stride, padding=1, groups=hidden,
                              name=f"{name}.depthwise"))
    relu.append(True)
    out = layers[-1].oh
    layers.append(ConvProblem(1, hidden, cout, out, out, 1, name=f"{name}.project"))
    relu.append(False)  # the linear bottleneck
    return ConvChain(layers, relu, residual=stride == 1 and cin == cout, name=name)


def _resnet18_block() -> ConvChain:
    name = "resnet18.layer1.0"
    convs = [ConvProblem(1, 64, 64, 56, 56, 3, padding=1, name=f"{name}.conv{i}") for i in (1, 2)]
    return ConvChain(convs, relu=True, residual=True, name=name)


def _resnet50_block(block: str) -> ConvChain:
    from dsasim.architect.problems.layers import parse_layer
    name = f"resnet50.{block}"
    layers = [parse_layer(f"resnet50.{block}_branch{b}") for b in ("2a", "2b", "2c")]
    assert all(isinstance(layer, ConvProblem) for layer in layers)
    return ConvChain(layers, relu=True, residual=block != "res2a", name=name)  # type: ignore[arg-type]


def chain_names() -> list[str]:
    """Every built-in chain name."""
    return ["resnet18.layer1.0", "resnet50.res2a", "resnet50.res2b",
            *(f"mobilenetv2.features.{i}" for i in range(1, len(MOBILENETV2_BLOCKS) + 1))]


def is_chain(text: str) -> bool:
    """Whether `text` names a chain (a preset, a chain family or a GEMM chain spec) rather than a single layer."""
    name = text.strip()
    return name in chain_names() or name.startswith(("mobilenetv2.features", "resnet18.", "gemm-chain"))


def parse_chain(text: str) -> ConvChain | GemmChain:
    """A built-in chain by name (see the module docstring) or a GEMM chain spec
    (`gemm-chain:m=..,n=..,k=..,l=..[,relu=1]`, `dsasim.architect.search.gemm_chain`); ValueError listing the names
    otherwise."""
    name = text.strip()
    if name.startswith("gemm-chain"):
        return parse_gemm_chain(name)
    if name == "resnet18.layer1.0":
        return _resnet18_block()
    if name in ("resnet50.res2a", "resnet50.res2b"):
        return _resnet50_block(name.split(".", 1)[1])
    prefix = "mobilenetv2.features."
    if name.startswith(prefix) and is_ascii_whole(name[len(prefix):]) \
            and 1 <= int(name[len(prefix):]) <= len(MOBILENETV2_BLOCKS):
        return _mobilenetv2(int(name[len(prefix):]))
    raise ValueError(f"unknown chain {name!r}; chains are resnet18.layer1.0, resnet50.res2a, resnet50.res2b, "
                     f"mobilenetv2.features.1 .. mobilenetv2.features.{len(MOBILENETV2_BLOCKS)} and GEMM chains "
                     f"gemm-chain:m=..,n=..,k=..,l=..")
