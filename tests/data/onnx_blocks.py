"""Small networks written as torch modules and exported to ONNX with torch's TorchScript exporter
(`torch.onnx.export(..., dynamo=False)`: it needs neither onnx nor onnxscript, and writes the graphs the field's
ONNX files hold: BatchNorm folded into Conv, nn.Linear on a 3-d input as MatMul + Add, GELU as Erf nodes).
tests/test_network_onnx.py reads each both ways (the module through torch.fx, the file through
`network_onnx`); docs/sizing-sram.md runs

    python tests/data/onnx_blocks.py basic_block basic_block.onnx

to write the file its `dsasim network` command reads."""

from __future__ import annotations

import math
import sys
import warnings

import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    """ResNet's basic block: conv-bn-relu, conv-bn, the identity added, relu."""

    example_input_shape = (1, 16, 8, 8)

    def __init__(self, channels: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class InvertedResidual(nn.Module):
    """MobileNetV2's inverted residual (expand 1x1, depthwise 3x3, project 1x1, ReLU6, the identity added), then
    global pooling and a classifier (Gemm in ONNX)."""

    example_input_shape = (1, 16, 8, 8)

    def __init__(self, channels: int = 16, expansion: int = 6) -> None:
        super().__init__()
        hidden = channels * expansion
        self.expand = nn.Sequential(nn.Conv2d(channels, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False),
                                nn.BatchNorm2d(hidden), nn.ReLU6())
        self.project = nn.Sequential(nn.Conv2d(hidden, channels, 1, bias=False), nn.BatchNorm2d(channels))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 10)

    def forward(self, x):
        y = x + self.project(self.dw(self.expand(x)))
        return self.fc(torch.flatten(self.pool(y), 1))


class TransformerLayer(nn.Module):
    """A post-norm encoder layer as BERT writes it: q, k, v projections, softmax(q kᵀ / √d) v by hand, the output
    projection, LayerNorm, a GELU feed-forward, LayerNorm."""

    example_input_shape = (2, 16, 64)

    def __init__(self, hidden: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.up, self.down = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def split(self, x):
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, e = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.head_dim), dim=-1)
        a = (p @ v).transpose(1, 2).reshape(b, n, e)
        x = self.norm1(x + self.o(a))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


class BatchedProducts(nn.Module):
    """A linear layer on a 3-d input (MatMul by a weight, Add of a bias) and a batched product of two
    activations (a 3-d MatMul): (b, n, d) @ (b, d, n)."""

    example_input_shape = (4, 8, 16)

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        a = self.proj(x)
        return torch.bmm(a, x.transpose(1, 2))


class Unsupported(nn.Module):
    """Ops dsasim does not model: a transposed convolution and a cumulative sum, between convs."""

    example_input_shape = (1, 8, 8, 8)

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.up = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.up(F.relu(self.conv(x)))
        return self.head(torch.cumsum(y, dim=1))


BLOCKS = {"basic_block": BasicBlock, "inverted_residual": InvertedResidual, "transformer_layer": TransformerLayer,
          "batched_products": BatchedProducts, "unsupported": Unsupported}


def export(module: nn.Module, path: str, shape: tuple[int, ...], dynamic: dict[int, str] | None = None,
           opset: int | None = None) -> None:
    """Write `module` (in eval mode) to `path` as ONNX for an input of `shape`; `dynamic`: axis -> name of the
    input's dynamic dimensions; `opset`: the exporter's default when None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(module.eval(), (torch.randn(shape),), path, dynamo=False, input_names=["x"],
                          opset_version=opset, dynamic_axes={"x": dynamic} if dynamic else None)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in BLOCKS:
        sys.exit(f"usage: python tests/data/onnx_blocks.py {'|'.join(BLOCKS)} OUT.onnx")
    torch.manual_seed(0)
    block = BLOCKS[sys.argv[1]]()
    export(block, sys.argv[2], block.example_input_shape)
