"""A network on hardware with levels below the SRAM (blog-l1: L1w, L1i and L1acc beside the TensorCore): each
layer's best two-level nest by DDR traffic, and what each level below the SRAM moves, in one table.

    python examples/network_levels.py       # prints what examples/network_levels.out holds

The same from the command line (the network named by its file):
`dsasim network examples/network_levels.py:TwoLinear --hardware blog-l1 --sram 64KiB`. The two linears would be one
fused chain on one-level hardware; the fused models know one on-chip level, so on blog-l1 they are searched as two
layers, and the output says so.
"""

import torch
from torch import nn

from dsasim import preset
from dsasim.architect.studies.network import import_network
from dsasim.architect.studies.network_eval import evaluate_network
from dsasim.cli.network import format_network


class TwoLinear(nn.Module):
    """Two linears (a ReLU between, fused as the first one's epilogue) and a softmax (a vector layer)."""

    example_input_shape = (16, 64)

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(64, 96, bias=False)
        self.b = nn.Linear(96, 32, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.b(torch.relu(self.a(x))), dim=-1)


if __name__ == "__main__":
    network = import_network(TwoLinear(), TwoLinear.example_input_shape, "two-linear")
    result = evaluate_network(network, [preset("blog-l1")], [64 * 1024])[0][0]
    print(format_network(result))
