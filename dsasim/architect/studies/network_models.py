"""Shape-only PyTorch definitions of whole networks: ResNet-18, ResNet-50, MobileNetV2 and one BERT-base layer.

The layouts and attribute names follow torchvision (ResNet, MobileNetV2) and the original BERT (post-LayerNorm),
so a traced graph names its layers as those models do. Every builder constructs its module on the meta device
(`with torch.device("meta"):`), so no weights are allocated and no initialisation runs: parameters and buffers
carry shapes only (ResNet-50 builds in well under a second). Modules come back in eval() mode and trace with
`torch.fx.symbolic_trace`; run them on meta tensors (e.g. with `torch.fx.passes.shape_prop.ShapeProp`) to get
every intermediate shape.

PRESETS names the ready-made networks with the input shape each expects.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

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
    "NetworkPreset",
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


def _check_positive_int(name: str, value: int) -> None:
    # bool is an int subclass, but bert_layer(heads=True) is a mistake, not one head
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"bert_layer: {name} must be a positive int, got {value!r}")


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
# Presets
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkPreset:
    """A named network: how to build it, the input shape it expects, and a one-line description."""

    name: str
    build: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    description: str
    # builds the module for another input shape where the module's shapes depend on it (None: `build` serves any)
    build_for: Callable[[tuple[int, ...]], nn.Module] | None = None


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
                      "3072 FFN, sequence 128", build_for=_bert_layer_for),
    )
}
