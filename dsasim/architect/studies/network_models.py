"""Shape-only PyTorch definitions of whole networks: ResNet-18, ResNet-50, MobileNetV2, one BERT-base layer and
two LLM decoder layers (Llama 3 8B, GPT-2 small) in their prefill and decode phases.

The layouts and attribute names follow torchvision (ResNet, MobileNetV2) and the original BERT (post-LayerNorm),
so a traced graph names its layers as those models do. Every builder constructs its module on the meta device
(`with torch.device("meta"):`), so no weights are allocated and no initialisation runs: parameters and buffers
carry shapes only (ResNet-50 builds in well under a second). Modules come back in eval() mode and trace with
`torch.fx.symbolic_trace`; run them on meta tensors (e.g. with `torch.fx.passes.shape_prop.ShapeProp`) to get
every intermediate shape.

PRESETS names the ready-made networks with the input shape each expects and the parameters each declares
(`PresetParameter`: name, default, range; `bert-base-layer:seq=384`, `llama3-8b-layer:phase=decode,context=4096,
batch=8`).

The decoder layers (`DecoderLayer`) take their dimensions from the published configurations:

- **llama3-8b-layer**: Meta's Llama 3 8B (model card and config.json of meta-llama/Meta-Llama-3-8B: hidden_size
  4096, num_attention_heads 32, num_key_value_heads 8 (head dimension 128), intermediate_size 14336 with SwiGLU
  (silu(x W_gate) * x W_up, then W_down), RMSNorm (eps 1e-5, written as Llama's code writes it), rotary position
  embeddings (rotate-half form), no biases, num_hidden_layers 32, max_position_embeddings 8192).
- **gpt2-layer**: GPT-2 small (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"; the
  Hugging Face gpt2 config: n_embd 768, n_head 12 (head dimension 64), FFN 4 x 768 = 3072 with GELU,
  pre-LayerNorm (eps 1e-5), learned positions (added to the embeddings, outside the layer), biases on every linear,
  n_layer 12, n_positions 1024). Its fused c_attn projection is written as three projections: the same weights,
  bytes and MACs.

A decoder layer runs in one of two phases:

- **prefill**: `batch` sequences of `seq` tokens, causal self-attention over them (the K and V it computes are the
  KV cache the decode phase reads);
- **decode**: one new token per sequence for `batch` sequences, each attending to its KV cache of `context` rows
  (buffers in DDR) plus the new token's: the new K and V rows are appended (`kv_cache_append`: stored into the cache
  by the layer that computed them, never a copy of the cache), and the attention reads context + 1 rows of K and V.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Mapping

import torch
from torch import nn

__all__ = [
    "BasicBlock",
    "Bottleneck",
    "ResNet",
    "InvertedResidual",
    "MobileNetV2",
    "BertLayer",
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "bert_layer",
    "DecoderLayer",
    "decoder_layer",
    "kv_cache_append",
    "NetworkPreset",
    "PresetParameter",
    "PRESETS",
]

_STRIDE_PLACES = ("3x3", "1x1")


# ---------------------------------------------------------------------------------------------------------------
# ResNet (He et al., 2016), torchvision layout
# ---------------------------------------------------------------------------------------------------------------


def _conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """A 3x3 conv with padding 1 and no bias (the BatchNorm after it supplies the shift)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def _conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """A 1x1 conv with no bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """ResNet-18/34's block: two 3x3 convs and a shortcut."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 stride_on: str = "3x3") -> None:
        super().__init__()
        # stride_on is accepted for a uniform block signature; a basic block has only 3x3 convs, so the
        # stride always sits on conv1 as in torchvision and the paper
        del stride_on
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """conv-bn-relu, conv-bn, add the (projected) input, relu."""
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 reduce, 3x3, 1x1 expand (x4), and a shortcut."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 stride_on: str = "3x3") -> None:
        super().__init__()
        # torchvision ("ResNet v1.5") strides the 3x3 conv; the paper's Caffe model strides the first 1x1
        stride_1x1, stride_3x3 = (1, stride) if stride_on == "3x3" else (stride, 1)
        width = planes
        self.conv1 = _conv1x1(inplanes, width, stride_1x1)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = _conv3x3(width, width, stride_3x3)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = _conv1x1(width, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Three conv-bn stages with relus between, add the (projected) input, relu."""
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet for ImageNet: stem, four stages of blocks, global average pool, 1000-way fc."""

    def __init__(self, block: type[BasicBlock] | type[Bottleneck], layers: list[int], num_classes: int = 1000,
                 stride_on: str = "3x3") -> None:
        super().__init__()
        # checked here too, so a ResNet built directly cannot fall through to the 1x1 layout by a typo
        _check_stride_on(stride_on)
        self.inplanes = 64
        self.stride_on = stride_on
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block: type[BasicBlock] | type[Bottleneck], planes: int, blocks: int,
                    stride: int = 1) -> nn.Sequential:
        """One stage: the first block may stride and change width (then its shortcut is a 1x1 conv + bn)."""
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                _conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, stride_on=self.stride_on)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, stride_on=self.stride_on) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Image batch (N, 3, H, W) to class scores (N, num_classes)."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def _check_stride_on(stride_on: str) -> None:
    if stride_on not in _STRIDE_PLACES:
        raise ValueError(
            f"stride_on must be '3x3' (torchvision, ResNet v1.5: stride on the 3x3 conv) or '1x1' (the paper's "
            f"Caffe model: stride on the first 1x1 conv), got {stride_on!r}"
        )


def resnet18() -> nn.Module:
    """ResNet-18 (He et al., 2016) in torchvision's layout, on the meta device, in eval mode."""
    with torch.device("meta"):
        model = ResNet(BasicBlock, [2, 2, 2, 2])
    return model.eval()


def resnet50(stride_on: str = "3x3") -> nn.Module:
    """ResNet-50 in torchvision's layout; stride_on="1x1" strides each stage's first 1x1 conv as the paper does."""
    _check_stride_on(stride_on)
    with torch.device("meta"):
        model = ResNet(Bottleneck, [3, 4, 6, 3], stride_on=stride_on)
    return model.eval()


# ---------------------------------------------------------------------------------------------------------------
# MobileNetV2 (Sandler et al., 2018), torchvision layout
# ---------------------------------------------------------------------------------------------------------------


def _conv_bn_relu6(in_channels: int, out_channels: int, kernel_size: int = 3, stride: int = 1,
                   groups: int = 1) -> nn.Sequential:
    """Conv (same padding, no bias), BatchNorm, ReLU6: indices 0, 1, 2 as in torchvision's Conv2dNormActivation."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding=(kernel_size - 1) // 2, groups=groups,
                  bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU6(inplace=True),
    )


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand (skipped when t = 1), 3x3 depthwise, 1x1 linear projection."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        self.stride = stride
        hidden_dim = inp * expand_ratio
        # a plain bool, so fx tracing takes the branch at trace time instead of seeing a tensor condition
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(_conv_bn_relu6(inp, hidden_dim, kernel_size=1))
        layers += [
            _conv_bn_relu6(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
            # the projection is linear (no ReLU6): the paper's "linear bottleneck"
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block, plus the input when the shape is unchanged."""
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


# (t = expansion, c = output channels, n = repeats, s = stride of the first repeat): Sandler et al., Table 2
_MOBILENET_V2_SETTING = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                         (6, 160, 3, 2), (6, 320, 1, 1)]


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2 at width 1.0: stem, 17 inverted residuals, 1x1 conv to 1280, pool, classifier."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        input_channel, last_channel = 32, 1280
        features: list[nn.Module] = [_conv_bn_relu6(3, input_channel, stride=2)]
        for t, c, n, s in _MOBILENET_V2_SETTING:
            for i in range(n):
                features.append(InvertedResidual(input_channel, c, s if i == 0 else 1, expand_ratio=t))
                input_channel = c
        features.append(_conv_bn_relu6(input_channel, last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.last_channel = last_channel
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(last_channel, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Image batch (N, 3, H, W) to class scores (N, num_classes)."""
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


def mobilenet_v2() -> nn.Module:
    """MobileNetV2 (Sandler et al., 2018) in torchvision's layout, on the meta device, in eval mode."""
    with torch.device("meta"):
        model = MobileNetV2()
    return model.eval()


# ---------------------------------------------------------------------------------------------------------------
# BERT-base encoder layer (Devlin et al., 2019), post-LayerNorm
# ---------------------------------------------------------------------------------------------------------------


class BertLayer(nn.Module):
    """One post-LayerNorm transformer encoder layer: self-attention and a GELU FFN, each with residual + LayerNorm.

    Shapes are held as Python ints (seq_len, heads, head_dim) so that fx tracing sees constant reshapes and no
    tensor-dependent control flow; only the batch size is read from the input. Dropouts are omitted (eval mode).
    """

    def __init__(self, seq_len: int, hidden: int, heads: int, intermediate: int) -> None:
        super().__init__()
        self.seq_len = seq_len
        self.hidden = hidden
        self.heads = heads
        self.head_dim = hidden // heads
        self.scale = math.sqrt(self.head_dim)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_output = nn.Linear(hidden, hidden)
        # BERT's LayerNorm epsilon
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, intermediate)
        self.gelu = nn.GELU()
        self.ffn_out = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, seq, hidden) -> (batch, heads, seq, head_dim)."""
        return x.view(x.size(0), self.seq_len, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, seq_len, hidden) to (batch, seq_len, hidden)."""
        q = self._split_heads(self.query(x))
        k = self._split_heads(self.key(x))
        v = self._split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.scale
        probs = torch.softmax(scores, dim=-1)
        context = torch.matmul(probs, v)
        context = context.permute(0, 2, 1, 3).contiguous().view(x.size(0), self.seq_len, self.hidden)
        attended = self.attention_norm(self.attention_output(context) + x)
        ffn = self.ffn_out(self.gelu(self.ffn_in(attended)))
        return self.output_norm(ffn + attended)


def _check_positive_int(name: str, value: int, owner: str = "bert_layer") -> None:
    # bool is an int subclass, but bert_layer(heads=True) is a mistake, not one head
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")


def bert_layer(seq_len: int = 128, hidden: int = 768, heads: int = 12, intermediate: int = 3072) -> nn.Module:
    """One BERT encoder layer (BERT-base sizes by default) for inputs of (batch, seq_len, hidden), on meta, in eval."""
    for name, value in (("seq_len", seq_len), ("hidden", hidden), ("heads", heads), ("intermediate", intermediate)):
        _check_positive_int(name, value)
    if hidden % heads:
        raise ValueError(f"bert_layer: hidden ({hidden}) must be divisible by heads ({heads}) to split into heads")
    with torch.device("meta"):
        model = BertLayer(seq_len, hidden, heads, intermediate)
    return model.eval()


def _bert_layer_for(shape: tuple[int, ...]) -> nn.Module:
    """A BERT-base layer for inputs of `shape` = (batch, sequence, 768): its reshapes hold the sequence length."""
    if len(shape) != 3 or shape[2] != 768:
        raise ValueError(f"bert-base-layer takes an input of (batch, sequence, 768), got {tuple(shape)}")
    return bert_layer(seq_len=shape[1])


# ---------------------------------------------------------------------------------------------------------------
# LLM decoder layers: Llama 3 8B, GPT-2 small (module docstring), prefill and decode
# ---------------------------------------------------------------------------------------------------------------

PHASES = ("prefill", "decode")


def kv_cache_append(cache: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """The KV cache (batch, kv heads, L, head dim) with `new` rows appended on the length axis: what the attention
    reads. The importer stores the new rows into the cache from the layer that made them (no copy of the cache)."""
    return torch.cat((cache, new), dim=-2)


torch.fx.wrap("kv_cache_append")  # a leaf of the traced graph: the importer reads it as the append it is


class _LlamaRMSNorm(nn.Module):
    """RMSNorm as Llama's reference code writes it: x * rsqrt(mean(x^2) + eps), times a weight."""

    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., hidden) normalised by its root mean square, scaled by the weight."""
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(x.dtype)


def _rotate_half(x: torch.Tensor, half: int) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the last axis: RoPE's rotate-half form."""
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class DecoderLayer(nn.Module):
    """One pre-norm decoder layer: norm, self-attention (grouped-query when kv_heads < heads, RoPE optional), residual;
    norm, feed-forward (SwiGLU or GELU), residual. Shapes are Python ints fixed at construction (fx sees constant
    reshapes); the phase decides the attention: prefill is causal over `seq` tokens, decode attends one new token to
    a KV cache of `context` rows (module docstring)."""

    def __init__(self, hidden: int, heads: int, kv_heads: int, ffn: int, *, swiglu: bool, rms_norm: bool,
                 rope: bool, bias: bool, phase: str, batch: int, seq: int, context: int, eps: float) -> None:
        super().__init__()
        self.hidden, self.heads, self.kv_heads, self.head_dim = hidden, heads, kv_heads, hidden // heads
        self.phase, self.batch, self.tokens = phase, batch, seq if phase == "prefill" else 1
        norm = (lambda: _LlamaRMSNorm(hidden, eps)) if rms_norm else (lambda: nn.LayerNorm(hidden, eps=eps))
        self.attention_norm = norm()
        kv_width = kv_heads * self.head_dim
        self.q_proj = nn.Linear(hidden, hidden, bias=bias)
        self.k_proj = nn.Linear(hidden, kv_width, bias=bias)
        self.v_proj = nn.Linear(hidden, kv_width, bias=bias)
        self.o_proj = nn.Linear(hidden, hidden, bias=bias)
        self.ffn_norm = norm()
        self.swiglu = swiglu
        if swiglu:
            self.gate_proj = nn.Linear(hidden, ffn, bias=bias)
        self.up_proj = nn.Linear(hidden, ffn, bias=bias)
        self.down_proj = nn.Linear(ffn, hidden, bias=bias)
        self.rope = rope
        if rope:  # the tables of the positions this phase rotates (prefill: 0..seq-1; decode: position context)
            self.register_buffer("cos", torch.ones(self.tokens, self.head_dim))
            self.register_buffer("sin", torch.ones(self.tokens, self.head_dim))
        if phase == "decode":
            self.register_buffer("k_cache", torch.zeros(batch, kv_heads, context, self.head_dim))
            self.register_buffer("v_cache", torch.zeros(batch, kv_heads, context, self.head_dim))

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        """(batch, tokens, heads * head_dim) -> (batch, heads, tokens, head_dim)."""
        return x.view(self.batch, self.tokens, heads, self.head_dim).transpose(1, 2)

    def _rotate(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.cos + _rotate_half(x, self.head_dim // 2) * self.sin

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, tokens, hidden) to (batch, tokens, hidden)."""
        h = self.attention_norm(x)
        q = self._heads(self.q_proj(h), self.heads)
        k = self._heads(self.k_proj(h), self.kv_heads)
        v = self._heads(self.v_proj(h), self.kv_heads)
        if self.rope:
            q, k = self._rotate(q), self._rotate(k)
        if self.phase == "decode":
            k, v = kv_cache_append(self.k_cache, k), kv_cache_append(self.v_cache, v)
        o = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.phase == "prefill",
                                                       enable_gqa=self.kv_heads != self.heads)
        x = x + self.o_proj(o.transpose(1, 2).reshape(self.batch, self.tokens, self.hidden))
        h = self.ffn_norm(x)
        if self.swiglu:
            f = self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))
        else:
            f = self.down_proj(nn.functional.gelu(self.up_proj(h)))
        return x + f


@dataclass(frozen=True)
class _DecoderDims:
    """A decoder model's published dimensions (module docstring) and its layer count."""

    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    swiglu: bool
    rms_norm: bool
    rope: bool
    bias: bool
    eps: float
    layers: int
    max_positions: int


LLAMA3_8B = _DecoderDims(hidden=4096, heads=32, kv_heads=8, ffn=14336, swiglu=True, rms_norm=True, rope=True,
                         bias=False, eps=1e-5, layers=32, max_positions=8192)
GPT2_SMALL = _DecoderDims(hidden=768, heads=12, kv_heads=12, ffn=3072, swiglu=False, rms_norm=False, rope=False,
                          bias=True, eps=1e-5, layers=12, max_positions=1024)


def decoder_layer(dims: _DecoderDims, phase: str = "prefill", batch: int = 1, seq: int = 128,
                  context: int = 1024) -> nn.Module:
    """One decoder layer of `dims` in `phase` (prefill: batch x seq tokens; decode: batch tokens over a KV cache of
    context rows), on meta, in eval."""
    if phase not in PHASES:
        raise ValueError(f"decoder_layer: phase must be one of {PHASES}, got {phase!r}")
    for name, value in (("batch", batch), ("seq", seq), ("context", context)):
        _check_positive_int(name, value, "decoder_layer")
    with torch.device("meta"):
        model = DecoderLayer(dims.hidden, dims.heads, dims.kv_heads, dims.ffn, swiglu=dims.swiglu,
                             rms_norm=dims.rms_norm, rope=dims.rope, bias=dims.bias, phase=phase, batch=batch,
                             seq=seq, context=context, eps=dims.eps)
    return model.eval()


# ---------------------------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PresetParameter:
    """A parameter a preset declares (`NAME:key=value,...`): a whole number in [low, high], or a word among
    `choices`; `only_with` (key, value): it applies only when that other parameter has that value."""

    name: str
    default: int | str
    description: str
    low: int = 1
    high: int = 1 << 20
    choices: tuple[str, ...] = ()
    only_with: tuple[str, str] | None = None
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.choices and self.default not in self.choices:
            raise ValueError(f"PresetParameter {self.name}: default {self.default!r} is not among {self.choices}")
        if not self.choices and not (isinstance(self.default, int) and self.low <= self.default <= self.high):
            raise ValueError(f"PresetParameter {self.name}: default {self.default!r} is outside [{self.low}, "
                             f"{self.high}]")

    def parse(self, preset: str, text: str) -> int | str:
        """The value `text` gives this parameter; ValueError (one line, with the range or the choices) otherwise."""
        from dsasim.util import is_ascii_whole

        text = text.strip()
        if self.choices:
            if text not in self.choices:
                raise ValueError(f"{preset}: {self.name}={text!r} is not one of {', '.join(self.choices)}")
            return text
        if not is_ascii_whole(text) or not self.low <= int(text) <= self.high:
            raise ValueError(f"{preset}: {self.name}={text!r} must be a whole number from {self.low} to {self.high} "
                             f"({self.description})")
        return int(text)

    def usage(self) -> str:
        """'name=default' with its range or choices, for a help line."""
        values = "|".join(self.choices) if self.choices else f"{self.low}..{self.high}"
        return f"{self.name}={values} (default {self.default})"


@dataclass(frozen=True)
class NetworkPreset:
    """A named network: how to build it, the input shape it expects, a one-line description and the parameters it
    declares (`with_parameters` builds it for their values)."""

    name: str
    build: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    description: str
    # builds the module for another input shape where the module's shapes depend on it (None: `build` serves any)
    build_for: Callable[[tuple[int, ...]], nn.Module] | None = None
    parameters: tuple[PresetParameter, ...] = ()
    # (module, input shape, tokens one run processes) for the parameters' values (None: no parameters)
    build_with: Callable[[Mapping[str, int | str]], tuple[nn.Module, tuple[int, ...], int]] | None = None
    model_layers: int = 0  # layers of this kind in the whole model (0: the preset is a whole network)
    example_spec: str = ""  # an example with parameters, for messages

    def __post_init__(self) -> None:
        if bool(self.parameters) != (self.build_with is not None):
            raise ValueError(f"NetworkPreset {self.name}: parameters and build_with come together (one builds for the "
                             f"other's values)")
        names = [alias for p in self.parameters for alias in (p.name,) + p.aliases]
        if len(names) != len(set(names)):
            raise ValueError(f"NetworkPreset {self.name}: a parameter name or alias is declared twice: {names}")
        for p in self.parameters:
            if p.only_with is not None and p.only_with[0] not in {q.name for q in self.parameters}:
                raise ValueError(f"NetworkPreset {self.name}: {p.name} applies only with {p.only_with[0]}, which "
                                 f"it does not declare")

    def parameter_values(self, spec: str, text: str) -> dict[str, int | str]:
        """The values of every parameter (defaults where `text`, 'key=value,...', gives none); ValueError (one
        line) for an unknown key, a key given twice, a bad value or a key that does not apply."""
        if not self.parameters:
            raise ValueError(f"{spec!r}: preset {self.name} takes no parameters (give --input-shape to change its "
                             f"input)")
        by_name = {alias: p for p in self.parameters for alias in (p.name,) + p.aliases}
        given: dict[str, int | str] = {}
        for item in text.split(","):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in by_name:
                raise ValueError(f"{spec!r}: {self.name} takes {', '.join(p.usage() for p in self.parameters)}; "
                                 f"e.g. {self.example()}")
            param = by_name[key]
            if param.name in given:
                raise ValueError(f"{spec!r}: {param.name} is given twice")
            given[param.name] = param.parse(self.name, value)
        values = {p.name: given.get(p.name, p.default) for p in self.parameters}
        for p in self.parameters:
            if p.name in given and p.only_with is not None and values[p.only_with[0]] != p.only_with[1]:
                raise ValueError(f"{spec!r}: {p.name} applies only with {p.only_with[0]}={p.only_with[1]} "
                                 f"(here {p.only_with[0]}={values[p.only_with[0]]})")
        return values

    def example(self) -> str:
        """An example spec: `example_spec`, else every parameter at its default."""
        return self.example_spec or f"{self.name}:" + ",".join(f"{p.name}={p.default}" for p in self.parameters)

    def spec_name(self, values: Mapping[str, int | str]) -> str:
        """The network's name for these values: with one parameter, the preset's name plus the parameter where it
        differs from its default (bert-base-layer:seq=384); with several, every one that applies
        (llama3-8b-layer:phase=decode,context=4096,batch=8), so the name says what ran."""
        applies = [p for p in self.parameters if p.only_with is None or values[p.only_with[0]] == p.only_with[1]]
        shown = applies if len(self.parameters) > 1 else [p for p in applies if values[p.name] != p.default]
        return self.name + (":" + ",".join(f"{p.name}={values[p.name]}" for p in shown) if shown else "")


def _bert_with(values: Mapping[str, int | str]) -> tuple[nn.Module, tuple[int, ...], int]:
    seq = int(values["seq"])
    return bert_layer(seq_len=seq), (1, seq, 768), seq


def _decoder_with(dims: _DecoderDims) -> Callable[[Mapping[str, int | str]], tuple[nn.Module, tuple[int, ...], int]]:
    def build(values: Mapping[str, int | str]) -> tuple[nn.Module, tuple[int, ...], int]:
        phase, batch = str(values["phase"]), int(values["batch"])
        seq, context = int(values["seq"]), int(values["context"])
        tokens = seq if phase == "prefill" else 1
        model = decoder_layer(dims, phase, batch, seq, context)
        return model, (batch, tokens, dims.hidden), batch * tokens
    return build


def _decoder_parameters(dims: _DecoderDims, seq: int, context: int) -> tuple[PresetParameter, ...]:
    # positions are bounded by the model's trained length: prefill's seq, and decode's context plus the new token
    return (PresetParameter("phase", "prefill", "prefill (a prompt) or decode (one new token)", choices=PHASES),
            PresetParameter("seq", seq, "prompt tokens per sequence", high=dims.max_positions,
                            only_with=("phase", "prefill"), aliases=("seq_len",)),
            PresetParameter("context", context, f"KV-cache rows per sequence; the model's {dims.max_positions:,} "
                            f"positions hold them and the new token", high=dims.max_positions - 1,
                            only_with=("phase", "decode")),
            PresetParameter("batch", 1, "sequences", high=4096))


_LLAMA_PARAMETERS = _decoder_parameters(LLAMA3_8B, seq=2048, context=4096)
_GPT2_PARAMETERS = _decoder_parameters(GPT2_SMALL, seq=1024, context=1023)


_IMAGE_INPUT = (1, 3, 224, 224)

PRESETS: dict[str, NetworkPreset] = {
    preset.name: preset
    for preset in (
        NetworkPreset("resnet18", resnet18, _IMAGE_INPUT,
                      "ResNet-18 (He et al. 2016), torchvision layout: basic blocks [2, 2, 2, 2], 1000 classes"),
        NetworkPreset("resnet50", resnet50, _IMAGE_INPUT,
                      "ResNet-50 (He et al. 2016), torchvision v1.5 layout: stride-2 on the bottleneck's 3x3 conv"),
        NetworkPreset("resnet50-caffe", functools.partial(resnet50, stride_on="1x1"), _IMAGE_INPUT,
                      "ResNet-50 (He et al. 2016), the paper's Caffe layout: stride-2 on the bottleneck's first 1x1"),
        NetworkPreset("mobilenetv2", mobilenet_v2, _IMAGE_INPUT,
                      "MobileNetV2 (Sandler et al. 2018), torchvision layout: width 1.0, 17 inverted residuals"),
        NetworkPreset("bert-base-layer", functools.partial(bert_layer, seq_len=128), (1, 128, 768),
                      "One BERT-base encoder layer (Devlin et al. 2019), post-LayerNorm: 768 hidden, 12 heads, "
                      "3072 FFN, sequence 128", build_for=_bert_layer_for,
                      parameters=(PresetParameter("seq", 128, "tokens per sequence", high=1 << 16,
                                                  aliases=("seq_len",)),),
                      build_with=_bert_with, model_layers=12, example_spec="bert-base-layer:seq=384"),
        NetworkPreset("llama3-8b-layer", functools.partial(decoder_layer, LLAMA3_8B, "prefill", 1, 2048, 4096),
                      (1, 2048, 4096),
                      "One Llama 3 8B decoder layer (Meta's model card, config.json): 4096 hidden, 32 query / 8 KV "
                      "heads of 128, SwiGLU FFN 14336, RMSNorm, RoPE; phase=prefill (seq) or decode (context)",
                      parameters=_LLAMA_PARAMETERS, build_with=_decoder_with(LLAMA3_8B), model_layers=32,
                      example_spec="llama3-8b-layer:phase=decode,context=4096,batch=8"),
        NetworkPreset("gpt2-layer", functools.partial(decoder_layer, GPT2_SMALL, "prefill", 1, 1024, 1023),
                      (1, 1024, 768),
                      "One GPT-2 small decoder layer (Radford et al. 2019, HF config): 768 hidden, 12 heads of 64, "
                      "GELU FFN 3072, pre-LayerNorm, biases; phase=prefill (seq) or decode (context)",
                      parameters=_GPT2_PARAMETERS, build_with=_decoder_with(GPT2_SMALL), model_layers=12,
                      example_spec="gpt2-layer:phase=prefill,seq=1024,batch=1"),
    )
}
