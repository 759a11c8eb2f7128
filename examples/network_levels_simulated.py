"""A network on hardware with levels below the SRAM traced and timed in one timeline: examples/network_levels.py's
two linears and softmax on blog-l1 at 64 KiB, each linear's best LevelNest run through the traced memory model (its
stages into L1w and L1i and its write-backs from L1acc on their own DMA engines), the whole network in one session.

    python examples/network_levels_simulated.py       # prints what examples/network_levels_simulated.out holds

The same from the command line: `dsasim network examples/network_levels.py:TwoLinear --hardware blog-l1 --sram 64KiB
--simulate`. Every entry's DDR bytes and every level's bytes staged in and written back equal the level search's
(the simulation refuses, naming the entry and level, where they would differ).
"""

from network_levels import TwoLinear  # this folder's example: run as a script, its folder is on the path

from dsasim import preset
from dsasim.architect.studies.network import import_network
from dsasim.architect.studies.network_eval import evaluate_network
from dsasim.architect.studies.network_simulation import simulate_network
from dsasim.cli.common import import_kernel
from dsasim.cli.network import format_simulation

if __name__ == "__main__":
    network = import_network(TwoLinear(), TwoLinear.example_input_shape, "two-linear")
    result = evaluate_network(network, [preset("blog-l1")], [64 * 1024])[0][0]
    print(format_simulation(simulate_network(result, import_kernel)))
