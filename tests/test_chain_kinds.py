"""The chain-kind registry (`dsasim.architect.search.chain_kinds`): a chain's kind is looked up by its class, the two
kinds' entries hold what differs between them, and a third kind registered here (in the test only) is searched by
`search_chain` and estimated by `estimate_chain_work` without any library file knowing it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.search.chain_kind import Chain, ChainKind, KernelRef
from dsasim.architect.search.chain_kinds import CHAIN_KINDS, CONV_CHAIN, GEMM_CHAIN, chain_kind_of, register_chain_kind
from dsasim.architect.model.fused_analysis import FusedAnalysis
from dsasim.architect.search.gemm_chain import GemmChain
from dsasim.architect.nests.loopnest import ConvProblem, MatmulProblem
from dsasim.hardware import load_hardware

BLOG = load_hardware("blog")


def conv(ic: int, oc: int, h: int) -> ConvProblem:
    """A 3x3 'same' convolution of one image."""
    return ConvProblem(1, ic, oc, h, h, 3, stride=1, padding=1)


def test_each_chain_class_finds_its_kind_and_a_subclass_its_base_kind():
    class MyConvChain(ConvChain):
        pass

    chain = ConvChain([conv(2, 2, 4), conv(2, 2, 4)])
    assert chain_kind_of(chain) is CONV_CHAIN
    assert chain_kind_of(GemmChain(m=4, n=4, k=4, l=4)) is GEMM_CHAIN
    assert chain_kind_of(MyConvChain([conv(2, 2, 4), conv(2, 2, 4)])) is CONV_CHAIN  # the nearest registered base
    assert isinstance(chain, Chain) and isinstance(GemmChain(m=4, n=4, k=4, l=4), Chain)


def test_an_unregistered_chain_is_refused_by_name():
    class Loose:
        pass

    with pytest.raises(TypeError, match="Loose is not a registered chain kind"):
        chain_kind_of(Loose())
    with pytest.raises(ValueError, match="ConvChain is already the chain kind 'conv'"):
        register_chain_kind(dataclasses.replace(GEMM_CHAIN, name="again", chain_type=ConvChain))
    with pytest.raises(ValueError, match="analyze must be callable"):
        dataclasses.replace(GEMM_CHAIN, analyze=None)


def test_the_conv_kind_fuses_every_run_of_two_or_more_layers_the_gemm_kind_the_whole_chain():
    """Three layers: the runs of two or more consecutive layers are [1 2], [2 3], [1 2 3] ((first, stop) = (0, 2),
    (1, 3), (0, 3)). A GEMM chain (two GEMMs) has one fused segment, the whole chain."""
    chain = ConvChain([conv(2, 2, 4), conv(2, 2, 4), conv(2, 2, 4)])
    assert set(CONV_CHAIN.fused_spaces(chain, BLOG)) == {(0, 2), (1, 3), (0, 3)}
    assert set(GEMM_CHAIN.fused_spaces(GemmChain(m=4, n=4, k=4, l=4), BLOG)) == {(0, 2)}


def test_the_gemm_kind_adds_its_rmw_and_chimera_figures_to_a_fused_part():
    """Only the GEMM kind's fused parts carry rmw and Chimera's DV / MU (the conv kind adds nothing)."""
    from dsasim.architect.search.fused_search import search_chain
    data = search_chain(GemmChain(m=8, n=8, k=8, l=8), BLOG, 64 * 1024).to_json("g")
    fused = [p for p in data["parts"] if p["fused"]]
    assert fused and all({"rmw_bytes", "chimera_dv_bytes", "chimera_mu_bytes"} <= set(p) for p in fused)
    assert CONV_CHAIN.part_json(None) == {}  # type: ignore[arg-type]


def test_the_conv_kind_says_why_nothing_fused_fits():
    """Two 3x3 convs 2 -> 2 channels: weights 2 x (2 * 2 * 3 * 3) = 72 elements, 144 B at 2-byte words."""
    chain = ConvChain([conv(2, 2, 4), conv(2, 2, 4)])
    assert "whole weights, 144 B" in CONV_CHAIN.no_fit_reason(chain, 2)


def test_each_kind_builds_its_chain_from_a_network_run():
    """A[8x16] @ B[16x32] = C[8x32], C @ D[32x4] = E: m=8, k=16, l=32, n=4. A second matmul reading 31 rows does
    not connect (None). A GEMM chain has no residual (the network keeps the add); a conv chain takes it."""
    first, second = MatmulProblem(8, 32, 16), MatmulProblem(8, 4, 32)
    assert GEMM_CHAIN.from_layers([first, second], [True, False], True) == GemmChain(m=8, n=4, k=16, l=32, relu=True)
    assert GEMM_CHAIN.from_layers([first, MatmulProblem(8, 4, 31)], [False, False], False) is None
    assert GEMM_CHAIN.from_layers([first, second], [False, False], True).residual is False
    assert CONV_CHAIN.from_layers([conv(2, 2, 4), conv(2, 2, 4)], [True, False], True).residual is True
    assert (CONV_CHAIN.max_layers, GEMM_CHAIN.max_layers) == (None, 2)


# ---------------------------------------------------------------------------------------- a toy third chain kind
TOY_SPACE_EVALUATIONS = 7
TOY_WORK_EVALUATIONS = 1234


class ToyChain:
    """Two matmuls, 4 x 4 x 4 each (the layer-by-layer half is the real search of each)."""

    residual = False

    def __init__(self) -> None:
        self.name = "toy"
        self.layers = (MatmulProblem(4, 4, 4, name="toy.1"), MatmulProblem(4, 4, 4, name="toy.2"))
        self.relu = (False, False)

    def __len__(self) -> int:
        return 2

    @property
    def macs(self) -> int:
        return 2 * 4 * 4 * 4

    def compulsory_bytes(self, word_bytes: int) -> int:
        return 3 * 16 * word_bytes  # two inputs and the output, 16 words each

    def spec(self) -> str:
        return "toy"

    def describe(self) -> str:
        return "# toy"

    def to_json(self) -> dict[str, Any]:
        return {"kind": "toy"}


@dataclasses.dataclass(frozen=True)
class ToyNest:
    chain: ToyChain

    def to_json(self) -> dict[str, Any]:
        return {"toy": True}


@dataclasses.dataclass(frozen=True)
class ToySpace:
    chain: ToyChain
    evaluations: int = TOY_SPACE_EVALUATIONS

    def best(self, sram_bytes: int, objective: Any) -> ToyNest | None:
        return ToyNest(self.chain) if sram_bytes >= 64 else None


def toy_analysis(nest: ToyNest, hw: Any) -> FusedAnalysis:
    """10 B loaded, 6 B stored (16 B: less than either layer alone moves, so the fused schedule wins), 20 cycles."""
    return FusedAnalysis(loaded_bytes=10, stored_bytes=6, loads=1, stores=1, opens=1, per_tensor_loaded={"x": 10},
                         macs=128, padded_macs=128, tensorcore_cycles=20, vector_cycles=0, peak_sram_bytes=64,
                         intermediate_peak_bytes=32, recomputed_macs=0, compulsory_bytes=16, dma_cycles=5, fits=True)


def toy_work(chain: ToyChain, hw: Any, objective: Any, n_capacities: int) -> Any:
    from dsasim.architect.search.layer_search import WorkEstimate
    return WorkEstimate(what="", evaluations=TOY_WORK_EVALUATIONS, traced_operations=0, seconds=0.0)


TOY_KIND = ChainKind(name="toy", chain_type=ToyChain, fused_spaces=lambda chain, hw: {(0, 2): ToySpace(chain)},
                     fused_work=toy_work, analyze=toy_analysis, part_json=lambda analysis: {"toy_marker": 7},
                     no_fit_reason=lambda chain, word_bytes: "toy", kernel=KernelRef("toy_kernel", "w", "e"),
                     network_member=lambda layer: False, max_layers=2, from_layers=lambda p, r, residual: None)


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CHAIN_KINDS, ToyChain, TOY_KIND)  # removed again after the test


def test_a_registered_toy_kind_is_searched_through_its_entry(toy_registered: None):
    """search_chain reaches the toy kind's space (its 7 evaluations), its analysis (16 B, max(5, 20) = 20 cycles)
    and its JSON extras; the layer-by-layer half is each layer's own search (the two layers are equal)."""
    from dsasim.architect.search.fused_search import search_chain
    from dsasim.architect.search.layer_search import search
    assert isinstance(ToyChain(), Chain)
    result = search_chain(ToyChain(), BLOG, 64 * 1024)
    one_layer = search(ToyChain().layers[0], BLOG, 64 * 1024)
    assert result.fused is not None and result.fused.analysis == toy_analysis(ToyNest(ToyChain()), BLOG)
    assert (result.fused.traffic_bytes, result.fused.cycles) == (16, 20)
    assert result.best == [result.fused]  # 16 B beats any layer by layer (each layer alone moves its 48 words)
    assert result.evaluations == 2 * one_layer.evaluations + TOY_SPACE_EVALUATIONS
    data = result.to_json("toy")
    assert data["parts"][0]["toy_marker"] == 7 and data["parts"][0]["fused_nest"] == {"toy": True}
    assert data["chimera"] is None  # no reference_choice in the toy entry


def test_a_registered_toy_kind_is_estimated_through_its_entry(toy_registered: None):
    """estimate_chain_work: the one distinct layer's search plus the toy kind's fused work (1234 evaluations)."""
    from dsasim.architect.search.fused_search import estimate_chain_work
    from dsasim.architect.search.layer_search import estimate_search_work
    layer = estimate_search_work(ToyChain().layers[0], BLOG, 1)
    assert estimate_chain_work(ToyChain(), BLOG).evaluations == layer.evaluations + TOY_WORK_EVALUATIONS
