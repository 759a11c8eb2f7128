"""One `Target`, one `Choice`, one `SearchOptions` (issue 27): the registry picks the kind, a new kind goes through
the command line without touching it, every kind's choice carries its search's figures, bad options are refused."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from dsasim.architect.studies.chain_target import ChainTarget
from dsasim.architect.studies.layer_target import LayerTarget
from dsasim.architect.studies.level_target import LevelTarget
from dsasim.architect.studies.target import Choice, SearchOptions, SweptTarget, Target, TargetKind
from dsasim.architect.studies import target_kinds
from dsasim.architect.studies.target_kinds import register_target_kind, target_of
from dsasim.architect.studies.target_sweep import TargetSweep
from dsasim.cli import main
from dsasim.hardware import preset

SMALL_CONV = "conv:ic=16,oc=16,h=8,k=3,p=1"
SMALL_GEMM_CHAIN = "gemm-chain:m=64,n=64,k=64,l=64"
FIGURES = ("loaded_bytes", "stored_bytes", "traffic_bytes", "peak_sram_bytes", "macs", "cycles")
NO_KERNELS = SearchOptions(confirm=0)  # the model's figures (no trace): fast and deterministic


# ------------------------------------------------------------------------------------------------ the registry
@pytest.mark.parametrize("spec, hardware, expected", [
    ("resnet18.layer1.0", "blog", ChainTarget),  # a conv chain preset
    (SMALL_GEMM_CHAIN, "blog", ChainTarget),  # a GEMM chain spec
    (SMALL_CONV, "blog", LayerTarget),  # a layer on one-level hardware
    ("gemm-1024", "blog", LayerTarget),
    (SMALL_CONV, "blog-l1", LevelTarget),  # the same layer on hardware with a level below the SRAM
    (SMALL_GEMM_CHAIN, "blog-l1", ChainTarget),  # a chain stays a chain (its search refuses the levels)
])
def test_target_of_picks_the_kind(spec: str, hardware: str, expected: type) -> None:
    target = target_of(spec, preset(hardware))
    assert type(target) is expected
    assert isinstance(target, Target) and isinstance(target, SweptTarget)
    assert target.spec == spec and target.hardware.name == hardware


def test_target_of_keeps_the_parsers_messages() -> None:
    from dsasim.architect.problems.chain_catalogue import parse_chain
    from dsasim.architect.problems.layers import parse_layer

    for spec, parse in (("no-such-layer", parse_layer), ("resnet18.layer9.9", parse_chain)):
        with pytest.raises(ValueError) as direct:
            parse(spec)
        with pytest.raises(ValueError) as via_registry:
            target_of(spec, preset("blog"))
        assert str(via_registry.value) == str(direct.value)


def test_register_target_kind_refuses_a_second_kind_of_one_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target_kinds, "TARGET_KINDS", list(target_kinds.TARGET_KINDS))
    with pytest.raises(ValueError, match="already registered"):
        register_target_kind(TargetKind("layer", lambda spec, hw: False, lambda spec, hw: None))


# ------------------------------------------------------------------------------ a toy kind through the CLI
@dataclass(frozen=True)
class ToyChoice:
    """A made-up schedule: `n` bytes loaded, `n` stored (figures chosen by hand)."""

    spec: str
    n: int
    sram_bytes: int
    kind = "toy"
    cycles_source = "estimate"
    schedule = None

    fits = property(lambda self: self.n <= self.sram_bytes)
    no_fit_reason = property(lambda self: f"toy {self.n} does not fit in {self.sram_bytes:,} B")
    loaded_bytes = property(lambda self: self.n)
    stored_bytes = property(lambda self: self.n)
    traffic_bytes = property(lambda self: 2 * self.n)
    peak_sram_bytes = property(lambda self: self.n)
    macs = property(lambda self: 0)
    cycles = property(lambda self: 0)
    lower_bound_bytes = property(lambda self: 2 * self.n)
    compulsory_bytes = property(lambda self: 2 * self.n)
    evaluations = property(lambda self: 1)

    def to_json(self) -> dict[str, Any]:
        return {"toy": self.spec, "traffic_bytes": self.traffic_bytes, "sram_bytes": self.sram_bytes}


@dataclass(frozen=True)
class ToyTarget:
    spec: str
    hardware: Any
    kind = "toy"
    progress_label = "search toy"

    def confirm_count(self, options: SearchOptions) -> int:
        if options.confirm:
            raise ValueError("--confirm does not apply to a toy")
        return 0

    def estimate_work(self, sram_bytes: int, options: SearchOptions) -> Any:
        from dsasim.architect.search.layer_search import WorkEstimate
        return WorkEstimate(what="a toy", evaluations=1, traced_operations=0, seconds=0.0)

    def search(self, sram_bytes: int, objective: Any, options: SearchOptions) -> ToyChoice:
        return ToyChoice(self.spec, int(self.spec.split(":")[1]), sram_bytes)


@pytest.fixture
def toy_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    from dsasim.view import target_text

    monkeypatch.setattr(target_kinds, "TARGET_KINDS", list(target_kinds.TARGET_KINDS))
    monkeypatch.setitem(target_text.CHOICE_TEXTS, "toy",
                        lambda choice, wall_seconds: f"TOY {choice.spec}: traffic {choice.traffic_bytes} B")
    register_target_kind(TargetKind("toy", lambda spec, hw: spec.startswith("toy:"),
                                    lambda spec, hw: ToyTarget(spec, hw)))


def test_a_new_kind_is_searched_printed_and_written_by_the_one_cli_path(toy_kind: None, tmp_path: Any,
                                                                        capsys: pytest.CaptureFixture) -> None:
    out_json = tmp_path / "toy.json"
    assert main(["search", "toy:100", "--sram", "1KiB", "--json", str(out_json)]) == 0
    out, err = capsys.readouterr()
    assert out == "TOY toy:100: traffic 200 B\n"  # 100 loaded + 100 stored
    assert json.loads(out_json.read_text()) == {"toy": "toy:100", "traffic_bytes": 200, "sram_bytes": 1024}
    assert isinstance(ToyTarget("toy:1", None), Target) and isinstance(ToyChoice("toy:1", 1, 1), Choice)
    assert not isinstance(ToyTarget("toy:1", None), SweptTarget)  # no sweep methods: search only


def test_a_kind_without_a_sweep_is_refused_by_sweep_sram(toy_kind: None, capsys: pytest.CaptureFixture) -> None:
    assert main(["sweep-sram", "toy:1", "--sizes", "2"]) == 2
    assert capsys.readouterr().err == ("dsasim sweep-sram: toy:1 is a toy target, which sweep-sram cannot sweep; "
                                       "search it at each size with dsasim search --sram\n")


def test_a_new_kind_refuses_its_options_and_reports_no_fit_through_the_cli(toy_kind: None,
                                                                          capsys: pytest.CaptureFixture) -> None:
    assert main(["search", "toy:5000", "--sram", "1KiB"]) == 1  # 5000 > 1024 B: nothing fits
    assert capsys.readouterr().err == "dsasim search: toy 5000 does not fit in 1,024 B\n"
    assert main(["search", "toy:1", "--confirm", "1"]) == 2
    assert capsys.readouterr().err == "dsasim search: --confirm does not apply to a toy\n"


# -------------------------------------------------------------------------------- the options, validated
@pytest.mark.parametrize("kwargs, error", [
    ({"confirm": -1}, ValueError),
    ({"confirm": 1.5}, TypeError),
    ({"confirm": True}, TypeError),  # a bool is not a count
    ({"simulate": "no"}, TypeError),
    ({"slide": 0}, TypeError),
    ({"force": None}, TypeError),
    ({"warn": "stderr"}, TypeError),
    ({"kernels": 3}, TypeError),
    ({"progress": [0.5]}, TypeError),
])
def test_search_options_refuse_bad_values(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error, match="SearchOptions: " + next(iter(kwargs))):
        SearchOptions(**kwargs)


def test_each_kind_applies_its_confirm_rule() -> None:
    blog, l1 = preset("blog"), preset("blog-l1")
    assert target_of(SMALL_CONV, blog).confirm_count(SearchOptions()) == 3  # a layer: its top 3 by default
    assert target_of(SMALL_CONV, blog).confirm_count(SearchOptions(confirm=5)) == 5
    assert target_of(SMALL_GEMM_CHAIN, blog).confirm_count(SearchOptions()) == 1  # its chosen schedules
    assert target_of(SMALL_CONV, l1).confirm_count(SearchOptions(confirm=0)) == 0
    with pytest.raises(ValueError, match="--confirm 2 does not apply to a chain's search"):
        target_of(SMALL_GEMM_CHAIN, blog).confirm_count(SearchOptions(confirm=2))
    with pytest.raises(ValueError, match=r"--confirm 2 does not apply to a search on blog-l1 \(levels"):
        target_of(SMALL_CONV, l1).confirm_count(SearchOptions(confirm=2))
    with pytest.raises(ValueError, match="--no-slide does not apply to a chain's search"):
        target_of(SMALL_GEMM_CHAIN, blog).confirm_count(SearchOptions(slide=False))
    with pytest.raises(ValueError, match="--no-simulate"):
        target_of(SMALL_CONV, l1).confirm_count(SearchOptions(simulate=False))


def test_the_public_names() -> None:
    import dsasim

    for name in ("Target", "Choice", "SearchOptions", "target_of"):
        assert name in dsasim.__all__ and getattr(dsasim, name) is not None


# -------------------------------------------------------------------------------------------- the one sweep
class ToySweptTarget(ToyTarget):
    def check_sweep(self, level: str | None, objective: str | None, options: SearchOptions) -> None:
        if level is not None:
            raise ValueError("--level does not apply to a toy")

    def check_sizes(self, sizes: Any, level: str | None) -> None:
        if any(s % 2 for s in sizes):
            raise ValueError("a toy takes even sizes only")

    def sweep_work(self, sizes: Any, level: str | None, options: SearchOptions) -> None:
        return None

    def sweep(self, sizes: Any, level: str | None, objective: str | None, options: SearchOptions,
              show_progress: bool) -> TargetSweep:
        choices = tuple(self.search(s, objective, options) for s in sizes)
        return TargetSweep(self, tuple(sizes), choices, evaluations=len(sizes), seconds=0.0)

    def sweep_json(self, sweep: TargetSweep) -> dict[str, Any]:
        return {"toy_sizes": list(sweep.sizes), "points": [c.to_json() for c in sweep.choices]}


def _toy_sweep_text(sweep: TargetSweep, n_sizes: int) -> str:
    return f"TOY SWEEP of {n_sizes} sizes: " + ", ".join(
        f"{c.sram_bytes} B " + (f"{c.traffic_bytes} B" if c.fits else "-") for c in sweep.choices)


def test_a_new_kind_is_swept_printed_and_written_by_the_one_cli_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                                     capsys: pytest.CaptureFixture) -> None:
    from dsasim.view import target_text

    monkeypatch.setattr(target_kinds, "TARGET_KINDS", list(target_kinds.TARGET_KINDS))
    monkeypatch.setitem(target_text.SWEEP_VIEWS, "toy", target_text.SweepView(_toy_sweep_text, "plot_sweep"))
    register_target_kind(TargetKind("toy", lambda spec, hw: spec.startswith("toy:"),
                                    lambda spec, hw: ToySweptTarget(spec, hw)))
    out_json, out_png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    assert main(["sweep-sram", "toy:3", "--sizes", "2,4", "--json", str(out_json), "--plot", str(out_png)]) == 0
    # toy:3 needs 3 B: it does not fit in 2 B; in 4 B it moves 3 loaded + 3 stored = 6 B
    assert capsys.readouterr().out == "TOY SWEEP of 2 sizes: 2 B -, 4 B 6 B\n"
    assert json.loads(out_json.read_text()) == {"toy_sizes": [2, 4], "points": [
        {"toy": "toy:3", "traffic_bytes": 6, "sram_bytes": 2}, {"toy": "toy:3", "traffic_bytes": 6, "sram_bytes": 4}]}
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the kind's plot, through the one entry point
    assert main(["sweep-sram", "toy:1", "--sizes", "2,3"]) == 2
    assert capsys.readouterr().err == "dsasim sweep-sram: a toy takes even sizes only\n"


def test_a_kind_whose_sweep_returns_another_type_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class OldStyleTarget(ToySweptTarget):
        def sweep(self, *args: Any, **kwargs: Any) -> Any:
            return {"sizes": [2]}

    monkeypatch.setattr(target_kinds, "TARGET_KINDS", list(target_kinds.TARGET_KINDS))
    register_target_kind(TargetKind("toy", lambda spec, hw: spec.startswith("toy:"),
                                    lambda spec, hw: OldStyleTarget(spec, hw)))
    with pytest.raises(TypeError, match="the toy target's sweep returned a dict, not a TargetSweep"):
        main(["sweep-sram", "toy:1", "--sizes", "2"])


def test_target_sweep_refuses_an_inconsistent_value() -> None:
    toy = ToySweptTarget("toy:1", None)
    one = (ToyChoice("toy:1", 1, 2),)
    assert TargetSweep(toy, (2,), one, 1, 0.0).kind == "toy"
    for sizes, choices, evaluations, match in (
            ((), (), 0, "at least one size"), ((2, 4), one, 1, "one choice per size"),
            ((4, 2), one * 2, 1, "increasing and distinct"), ((0,), one, 1, "positive whole numbers"),
            ((2,), one, -1, "evaluations must be")):
        with pytest.raises(ValueError, match=match):
            TargetSweep(toy, sizes, choices, evaluations, 0.0)
    with pytest.raises(TypeError, match="tuples"):
        TargetSweep(toy, [2], list(one), 1, 0.0)  # type: ignore[arg-type]


def test_a_layer_and_a_chain_sweep_are_the_kind_specific_sweeps() -> None:
    from dsasim.architect.problems.chain_catalogue import parse_chain
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.studies.sweep import sweep_chain, sweep_sram

    hw, sizes = preset("blog"), [8 * 1024, 32 * 1024]
    layer = target_of(SMALL_CONV, hw).sweep(sizes, None, None, NO_KERNELS, show_progress=False)
    assert layer.to_json() == sweep_sram(LayerTarget(SMALL_CONV, parse_layer(SMALL_CONV), hw), sizes).to_json()
    chain = target_of(SMALL_GEMM_CHAIN, hw).sweep(sizes, None, "cycles", NO_KERNELS, show_progress=False)
    assert chain.to_json() == sweep_chain(ChainTarget(SMALL_GEMM_CHAIN, parse_chain(SMALL_GEMM_CHAIN), hw), sizes,
                                          objective="cycles").to_json()


def test_every_kind_sweeps_to_the_one_type_and_a_level_sweep_keeps_its_json() -> None:
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.level_search import sweep_levels
    from dsasim.view.target_text import format_target_sweep

    blog, l1, sizes = preset("blog"), preset("blog-l1"), [8 * 1024, 32 * 1024]
    for spec, hw, level in ((SMALL_CONV, blog, None), (SMALL_GEMM_CHAIN, blog, None), (SMALL_CONV, l1, "L1w")):
        target = target_of(spec, hw)
        sweep = target.sweep(sizes, level, None, NO_KERNELS, show_progress=False)
        assert isinstance(sweep, TargetSweep) and sweep.target == target and sweep.sizes == tuple(sizes)
        assert len(sweep.choices) == 2 and sweep.level == (level or "SRAM")
        assert format_target_sweep(sweep, 2).splitlines()[-1].startswith("2 sizes, ")
    # the level sweep's JSON is the shape its own search record writes (LevelSweep.to_json, a separate writer)
    # (the TargetSweep adds the sizing answers every kind's sweep gets)
    assert {k: v for k, v in sweep.to_json().items() if k != "sizing"} == sweep_levels(
        parse_layer(SMALL_CONV), l1, "L1w", sizes, "traffic", layer=SMALL_CONV).to_json()
    ranked = target_of(SMALL_CONV, l1).sweep(sizes[:1], "L1w", "cycles", NO_KERNELS, show_progress=False)
    assert ranked.objective == "cycles" and ranked.to_json()["objective"] == "cycles"  # the objective asked for


def test_each_kind_applies_its_sweep_rules() -> None:
    blog, l1 = preset("blog"), preset("blog-l1")
    layer, chain, levels = target_of(SMALL_CONV, blog), target_of(SMALL_GEMM_CHAIN, blog), target_of(SMALL_CONV, l1)
    layer.check_sweep("SRAM", "traffic", SearchOptions())  # the SRAM, ranked by traffic: taken
    with pytest.raises(ValueError, match="--level L1w: on blog, a layer is swept over the SRAM only"):
        layer.check_sweep("L1w", None, SearchOptions())
    with pytest.raises(ValueError, match="--objective cycles does not apply to a single layer's sweep on blog"):
        layer.check_sweep(None, "cycles", SearchOptions())
    layer.check_sizes([1], None)
    with pytest.raises(ValueError, match="every size must hold at least one 1-byte word"):
        layer.check_sizes([0], None)  # blog's word: 1 byte
    with pytest.raises(ValueError, match="--no-slide does not apply to a chain's sweep"):
        chain.check_sweep(None, None, SearchOptions(slide=False))
    with pytest.raises(ValueError, match="chain sweep"):
        target_of(SMALL_GEMM_CHAIN, l1).check_sweep(None, None, SearchOptions())
    with pytest.raises(ValueError, match="--no-simulate"):
        levels.check_sweep(None, None, SearchOptions(simulate=False))
    levels.check_sizes([1024, 2048], "L1w")
    with pytest.raises(ValueError, match="--level L1w at 1 GiB: "):  # an L1 larger than the SRAM above it
        levels.check_sizes([1 << 30], "L1w")


# ------------------------------------------------------------- the choice's figures are its search's figures


def test_a_layer_choice_carries_the_search_candidate() -> None:
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.layer_search import search

    hw = preset("blog")
    direct = search(parse_layer(SMALL_CONV), hw, 16 * 1024, "traffic")
    choice = target_of(SMALL_CONV, hw).search(16 * 1024, "traffic", NO_KERNELS)
    assert choice.fits
    assert {f: getattr(choice, f) for f in FIGURES} == {f: getattr(direct.best, f) for f in FIGURES}
    assert choice.traffic_bytes == choice.loaded_bytes + choice.stored_bytes
    assert (choice.lower_bound_bytes, choice.compulsory_bytes) == (direct.bound.bytes, direct.bound.compulsory_bytes)
    assert choice.cycles_source == "estimate" and choice.schedule == direct.best.nest
    assert choice.to_json()["traffic_bytes"] == direct.best.traffic_bytes


def test_a_chain_choice_carries_the_best_partitions_totals() -> None:
    from dsasim.architect.problems.chain_catalogue import parse_chain
    from dsasim.architect.search.fused_search import search_chain

    hw = preset("blog")
    direct = search_chain(parse_chain(SMALL_GEMM_CHAIN), hw, 64 * 1024, "traffic")
    choice = target_of(SMALL_GEMM_CHAIN, hw).search(64 * 1024, "traffic", NO_KERNELS)
    want = direct.to_json(SMALL_GEMM_CHAIN)
    # the search's JSON, with the partition's energy beside it (and each part's)
    from dsasim.architect.studies.chain_energy import chain_result_json
    got = choice.to_json()
    assert choice.fits and got == chain_result_json(direct, SMALL_GEMM_CHAIN) and got["energy_pj"] > 0
    assert {k: v for k, v in got.items() if k in want and k != "parts"} == {k: v for k, v in want.items()
                                                                           if k != "parts"}
    assert {f: getattr(choice, f) for f in ("loaded_bytes", "stored_bytes", "traffic_bytes", "cycles")} == \
        {f: want[f] for f in ("loaded_bytes", "stored_bytes", "traffic_bytes", "cycles")}
    assert choice.macs == parse_chain(SMALL_GEMM_CHAIN).macs  # no recomputation in a GEMM chain: its MACs
    assert choice.peak_sram_bytes == max(p["peak_sram_bytes"] for p in want["parts"])
    assert choice.lower_bound_bytes == choice.compulsory_bytes == want["compulsory_bytes"]


def test_a_level_choice_carries_the_sram_levels_figures() -> None:
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.level_search import search_levels

    hw = preset("blog-l1")
    direct = search_levels(parse_layer(SMALL_CONV), hw, 64 * 1024, "traffic")
    choice = target_of(SMALL_CONV, hw).search(64 * 1024, "traffic", NO_KERNELS)
    sram = direct.best.level("SRAM")
    assert (choice.loaded_bytes, choice.stored_bytes, choice.peak_sram_bytes) == \
        (sram.loaded_bytes, sram.stored_bytes, sram.peak_bytes)
    # useful MACs skip the padding: per axis 8 outputs x 3 taps less the 2 taps on the border (p=1): 22
    assert choice.cycles == round(direct.best.cycles) and choice.macs == 16 * 16 * 22 * 22
    assert choice.traced is None and choice.cycles_source == "estimate"
    assert choice.to_json()["levels"] == [lv.to_json() for lv in direct.best.levels]


def test_a_chain_that_does_not_fit_says_it_is_a_chain() -> None:
    """2 B of SRAM hold not even one 1-byte element of each operand of the first GEMM (a, b and its output: 3 B),
    so no partition fits; the reason names the chain as the network evaluation's reason always did (issue 27: the
    network now reads this reason from the choice; before, `dsasim search` said 'no schedule of gemm-chain:...')."""
    target = target_of(SMALL_GEMM_CHAIN, preset("blog"))
    choice = target.search(2, "traffic", NO_KERNELS)
    assert not choice.fits
    assert choice.no_fit_reason == f"no schedule of the chain {SMALL_GEMM_CHAIN} fits in 2 B of SRAM"
