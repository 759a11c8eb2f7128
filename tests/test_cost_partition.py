"""The chain search without runners adds two estimators into one total (review §1.3): a fused segment's cycles are
the overlap bound max(DMA, TensorCore + vector) (`FusedAnalysis.estimated_cycles`), a single layer's are the loop
nest's pipeline estimate (`dsasim.cost.pipeline_estimate`: the overlap bound plus fill / drain, 1-way exposure
and ISSUE_CYCLES per tile compute). Kept on purpose for now (see the module `dsasim.cost`): this pins what each
part reports and the direction of the bias, so a change to either estimator shows here."""

from __future__ import annotations

import math

from dsasim.architect.model.analytic import analyze
from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.search.fused_search import search_chain
from dsasim.architect.nests.loopnest import ConvProblem
from dsasim.cost import ISSUE_CYCLES, ddr_port, dma_cycles, overlapped_cycles
from dsasim.hardware import preset

BLOG = preset("blog")


def test_each_part_of_a_partition_reports_its_own_estimator_and_layers_pay_the_fill_and_issue_terms():
    chain = ConvChain([ConvProblem(1, 16, 16, 12, 12, 3, padding=1, name=f"c{i}") for i in (1, 2)], relu=True,
                      name="two-3x3")
    result = search_chain(chain, BLOG, 64 << 10)
    fused, layers = result.fused, result.layer_by_layer
    assert fused is not None and layers is not None
    a = fused.analysis
    assert fused.cycles == a.estimated_cycles == overlapped_cycles(a.dma_cycles, a.tensorcore_cycles
                                                                    + a.vector_cycles)
    for part in layers:
        nest = part.candidate.nest
        model = analyze(nest, BLOG)
        assert part.cycles == part.candidate.estimated_cycles == model.estimated_cycles
        # the overlap bound of the same nest (the fused segments' estimator), DMA rounded once per direction
        bound = overlapped_cycles(dma_cycles(ddr_port(BLOG), model.loads, model.loaded_bytes, model.stores,
                                             model.stored_bytes, whole=False), model.tensorcore_cycles)
        iterations = math.prod(nest.trips(d) for d in nest.problem.dims)
        # the pipeline estimate adds at least the issue cycles and the first load's setup on top of the bound
        assert part.cycles >= round(bound) + ISSUE_CYCLES * iterations + BLOG.dma_setup_cycles
    totals = result.totals(layers)
    assert totals["cycles"] == sum(p.cycles for p in layers)
