"""Network evaluation over targets (issue 27): every searched piece of a network (a tensorcore layer's problem, a
chain) is a target found by `network_target_of`, swept by the one task `sweep_target_task`; a new target kind is
evaluated in a network without a change to network_eval."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Sequence

import pytest

from dsasim import preset
from dsasim.architect.studies import target_kinds
from dsasim.architect.problems.chain_catalogue import parse_chain
from dsasim.architect.studies.chain_target import ChainTarget
from dsasim.architect.studies.layer_target import LayerTarget
from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.studies.network import TENSORCORE, Network, NetworkLayer
from dsasim.architect.studies.network_eval import evaluate_network
from dsasim.architect.studies.target import TargetKind
from dsasim.architect.studies.target_figures import NetworkChoice, NetworkTarget, TargetFigures, sweep_target_task
from dsasim.architect.studies.target_kinds import network_target_of

BLOG = preset("blog")


# ------------------------------------------------------------------------------------------ a toy kind
@dataclass(frozen=True)
class ToyPiece:
    """A network piece no built-in kind evaluates: `n` bytes of data, read once."""

    n: int


@dataclass(frozen=True)
class ToyChoice:
    """The toy's figures under `sram_bytes`: it fits when n <= sram_bytes; loads n B, stores n / 2 B, runs 384 MACs
    in 2 TensorCore cycles and takes 7 cycles."""

    piece: ToyPiece
    sram_bytes: int

    spec = "toy"
    kind = "toy"
    cycles_source = "estimate"
    evaluations = 1

    fits = property(lambda self: self.piece.n <= self.sram_bytes)
    no_fit_reason = property(lambda self: f"toy {self.piece.n} does not fit in {self.sram_bytes:,} B")
    loaded_bytes = property(lambda self: self.piece.n)
    stored_bytes = property(lambda self: self.piece.n // 2)
    traffic_bytes = property(lambda self: self.piece.n + self.piece.n // 2)
    peak_sram_bytes = property(lambda self: self.piece.n)
    macs = property(lambda self: 384)
    tensorcore_cycles = property(lambda self: 2)
    cycles = property(lambda self: 7)
    lower_bound_bytes = property(lambda self: self.piece.n)
    compulsory_bytes = property(lambda self: self.piece.n)
    schedule = property(lambda self: "all at once")

    def network_schedule(self) -> tuple[str, dict[str, Any]]:
        return "", {"toy": self.piece.n}

    def to_json(self) -> dict[str, Any]:
        return {"toy": self.piece.n}


SWEPT: list[tuple[int, ...]] = []  # the sizes of every toy sweep (a search per distinct piece, not per layer)


@dataclass(frozen=True)
class ToyTarget:
    spec: str
    piece: ToyPiece
    hardware: Any

    kind = "toy"
    progress_label = "toy"

    def network_choices(self, sizes: Sequence[int], objective: Any) -> list[ToyChoice]:
        SWEPT.append(tuple(sizes))
        return [ToyChoice(self.piece, s) for s in sizes]


@pytest.fixture
def toy_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    toy = TargetKind("toy", lambda spec, hardware: False, lambda spec, hardware: None,
                     lambda piece, hardware: ToyTarget("toy", piece, hardware) if isinstance(piece, ToyPiece)
                     else None)
    monkeypatch.setattr(target_kinds, "TARGET_KINDS", [toy, *target_kinds.TARGET_KINDS])
    SWEPT.clear()


def test_a_new_kind_is_evaluated_in_a_network_without_editing_network_eval(toy_kind: None) -> None:
    """Two layers of one toy piece (n = 500 B), the second batched 3 times, at 100 B and 1,000 B of SRAM.
    At 100 B nothing fits (500 > 100): both are unplaceable, with the toy's reason. At 1,000 B, per layer
    count x figures: loaded 500 + 3 x 500 = 2,000 B, stored 250 + 3 x 250 = 1,000 B, cycles 7 + 3 x 7 = 28,
    MACs 384 + 3 x 384 = 1,536; utilization 384 / (2 cycles x 16 x 24 lanes) = 0.5. One search for both layers."""
    piece = ToyPiece(500)
    layers = (NetworkLayer(name="t1", op="toy", kind=TENSORCORE, shape="toy 500", problem=piece),
              NetworkLayer(name="t2", op="toy", kind=TENSORCORE, shape="toy 500", problem=piece, count=3))
    net = Network(name="toynet", input_shape=(1,), layers=layers)
    small, large = evaluate_network(net, [BLOG], [100, 1000])[0]
    assert SWEPT == [(100, 1000)]
    assert small.unplaceable == ["t1", "t2"]
    assert small.layers[0].reason == "toy 500 does not fit in 100 B"
    assert large.unplaceable == [] and not large.partial
    assert (large.loaded_bytes, large.stored_bytes, large.cycles, large.macs) == (2000, 1000, 28, 1536)
    assert (large.lower_bound_bytes, large.compulsory_bytes) == (2000, 2000)
    assert large.layers[1].tensorcore_utilization == 0.5
    assert large.layers[1].schedule == {"toy": 500}  # no "problem" in it to label with the layer's name
    # the toy's choice counts no accesses: its energy is unknown, left out and named, never a zero
    assert large.energy is None and large.energy_left_out == ["t1", "t2"]
    assert large.to_json()["energy_pj"] is None and large.to_json()["energy_left_out"] == ["t1", "t2"]


def test_a_piece_no_kind_evaluates_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="no target kind evaluates a ToyPiece in a network"):
        network_target_of(ToyPiece(1), BLOG)


# ------------------------------------------------------------------------------------ the built-in kinds
def test_the_built_in_pieces_are_layer_and_chain_targets_that_pickle() -> None:
    """A worker process or a Dask worker receives the target pickled: it must come back equal."""
    problem = parse_layer("conv:ic=16,oc=16,h=8,k=3,p=1")
    chain = parse_chain("gemm-chain:m=64,n=64,k=64,l=64")
    layer_t, chain_t = network_target_of(problem, BLOG), network_target_of(chain, BLOG)
    assert isinstance(layer_t, LayerTarget) and layer_t.spec == problem.spec()
    assert isinstance(chain_t, ChainTarget) and chain_t.spec == chain.spec()
    for t in (layer_t, chain_t):
        assert isinstance(t, NetworkTarget)
        assert pickle.loads(pickle.dumps(t)) == t


def test_the_task_gives_a_layers_figures_from_its_choice() -> None:
    """gemm m=n=k=64 (1-byte words) under 64 KiB: all three operands fit (3 x 4,096 B), so the best schedule moves
    the compulsory traffic: A and B loaded once (8,192 B), C stored once (4,096 B); its bound is that too;
    262,144 MACs. Under 2 B not even one element of each operand fits."""
    problem = parse_layer("gemm:m=64,n=64,k=64")
    target = network_target_of(problem, BLOG)
    choices = target.network_choices((2, 65536), "traffic")
    assert all(isinstance(c, NetworkChoice) for c in choices)
    tiny, fits = sweep_target_task(target, (2, 65536))
    assert isinstance(tiny, str) and tiny.startswith(f"no tiling of {problem.spec()} fits in 2 B of SRAM")
    assert isinstance(fits, TargetFigures)
    assert (fits.loaded_bytes, fits.stored_bytes, fits.compulsory_bytes, fits.lower_bound_bytes) == \
        (8192, 4096, 12288, 12288)
    assert fits.macs == 64 * 64 * 64 and fits.label == ""
    assert fits.schedule["problem"]["name"] == problem.name


def test_the_task_gives_a_chains_partition_and_reason() -> None:
    chain = parse_chain("gemm-chain:m=64,n=64,k=64,l=64")
    tiny, fits = sweep_target_task(network_target_of(chain, BLOG), (2, 1 << 20))
    assert tiny == f"no schedule of the chain {chain.spec()} fits in 2 B of SRAM"
    assert isinstance(fits, TargetFigures)
    assert fits.label == fits.schedule["partition"] and fits.label.startswith("[")
    # both GEMMs (2 x 64^3 MACs), whatever the partition; the TensorCore (16 in x 24 out lanes) takes per GEMM at
    # least 64 rows x ceil(64 / 16) x ceil(64 / 24) = 64 x 4 x 3 = 768 cycles, and with 1 MiB nothing forces
    # smaller tiles (more padding): 2 x 768 = 1,536
    assert fits.macs == 2 * 64 ** 3
    assert fits.tensorcore_cycles == 1536


def test_figures_refuse_a_choice_that_does_not_fit_and_bad_values() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        TargetFigures.of(ToyChoice(ToyPiece(5), 1))
    with pytest.raises(ValueError, match="loaded_bytes must be a whole number"):
        TargetFigures(loaded_bytes=-1, stored_bytes=0, cycles=0, tensorcore_cycles=0, macs=0, peak_sram_bytes=0,
                      lower_bound_bytes=0, compulsory_bytes=0, label="", schedule={})


def test_a_registered_kind_is_asked_before_the_built_in_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind registered for a piece the layer kind also takes (a GEMM's problem) gets it: registered kinds come
    first, as for `target_of`."""
    problem = parse_layer("gemm:m=64,n=64,k=64")
    mine = TargetKind("mine", lambda spec, hardware: False, lambda spec, hardware: None,
                      lambda piece, hardware: ToyTarget("mine", piece, hardware))
    monkeypatch.setattr(target_kinds, "TARGET_KINDS", [mine, *target_kinds.TARGET_KINDS])
    assert network_target_of(problem, BLOG) == ToyTarget("mine", problem, BLOG)
