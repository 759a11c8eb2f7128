"""Trust, round two (strided): `sweep-sram CHAIN` and `search CHAIN` give the same point at the same size.

The sweep used to take each layer from one search front for all sizes, which ranks 1-way nests and breaks
traffic ties by other seeds than the one-size search: same traffic, another nest, other cycles (resnet18.layer1.0
at 64 KiB: 709,760 simulated cycles against the search's 698,028). Each size's layers are now searched as
`search_chain` searches them, so the sweep's JSON per size is the search's JSON.
"""

from __future__ import annotations

from dsasim import preset
from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.search.fused_search import search_chain
from dsasim.architect.nests.loopnest import ConvProblem
from dsasim.architect.studies.chain_energy import chain_result_json
from dsasim.architect.studies.chain_target import ChainTarget
from dsasim.architect.studies.sweep import sweep_chain

BLOG = preset("blog")


def test_chain_sweep_point_is_the_search_at_that_size_cycles_included():
    # a small chain where the shared front keeps a traffic-tied nest with other estimated cycles at 2 KiB
    chain = ConvChain([ConvProblem(1, 8, 8, 12, 12, 3, padding=1), ConvProblem(1, 8, 16, 12, 12, 1)], relu=True)
    size = 2048
    point = sweep_chain(ChainTarget("chain", chain, BLOG), [size]).choices[0].to_json("chain")
    alone = chain_result_json(search_chain(chain, BLOG, size), "chain")  # the search's JSON, its energy beside it
    assert point["layer_by_layer_cycles"] == alone["layer_by_layer_cycles"]
    assert point["cycles"] == alone["cycles"]
    assert point == alone  # every figure, the nests and the evaluation count included
