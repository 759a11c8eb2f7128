"""Size an accelerator's SRAM for a network of your own: traffic and estimated cycles at each SRAM size, and the
smallest size within 10 % of the compulsory traffic (each input, weight and output byte moved once).

    python examples/network_sram.py         # prints what examples/network_sram.out holds

The command line does the same for a preset or an importable module:
`dsasim sweep-sram --network mypkg.models:SmallNet --input-shape 1,3,112,112 --sizes 16KiB:1MiB:7 --within 10%`.
"""

import torch
from torch import nn

from dsasim import preset
from dsasim.architect.studies.network import import_network
from dsasim.architect.studies.network_eval import smallest_within, sweep_network


class SmallNet(nn.Module):
    """A stem conv, one residual basic block (two 3x3 convs, fused as a chain) and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, stride=2, padding=1)
        self.conv1 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 32, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        y = self.conv2(torch.relu(self.conv1(x)))
        x = torch.relu(x + y)
        return self.fc(torch.flatten(self.pool(x), 1))


network = import_network(SmallNet(), (1, 3, 112, 112), name="smallnet")  # torch.fx: shapes only, no data
for layer in network.layers:
    print(f"{layer.name:8s} {layer.kind:10s} {layer.op}")
sizes = [16 * 1024 * 2 ** i for i in range(7)]                  # 16 KiB .. 1 MiB
sweep = sweep_network(network, [preset("blog")], sizes)
results = sweep.results[0]                                        # one hardware: its row of SRAM sizes
print(f"{'SRAM':>9s} {'traffic B':>11s} {'compulsory B':>13s} {'cycles (est)':>13s}")
for result in results:
    print(f"{result.sram_bytes // 1024:5d} KiB {result.traffic_bytes:11,} {result.compulsory_bytes:13,} "
          f"{result.cycles:13,}")
best = smallest_within(results, 0.10)
print("smallest SRAM within 10 % of compulsory:", f"{best.sram_bytes // 1024} KiB" if best else "none")
