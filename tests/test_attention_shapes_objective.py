"""Issue 29: `dsasim shapes attention:... --vary ... --objective traffic|cycles|energy|edp` — per length the best
schedule by the objective, the length-generic schedule and the dispatch table in the objective's figure.
Expected figures are derived by hand in the comments, or by a brute force written here, independent of the
search's ranking."""

from __future__ import annotations

import json

import pytest

from dsasim.cli import main
from tests.cli_helpers import one_line_error

# One head, d=16, n = m (self-attention, not causal) at 32 and 64, on `blog` (1-byte words; DMA setup 64 cycles,
# 32 B/cycle on one port shared by loads and stores; TensorCore block 16 rows x 24 columns; 32 vector lanes), SRAM
# 8 KiB. Compulsory traffic at length L: Q, K, V, O of L x 16 B each = 64 L (2,048 B at 32, 4,096 B at 64).
SPEC = "attention:h=1,n=64,d=16"
VARY = "n+m=32,64"
SRAM = "8KiB"

# At 64 the two objectives pick different schedules.
# q-outer br=64 bc=48 (traffic's pick): one row tile of 64 rows, key tiles of 48 then 16 keys.
#   traffic: Q, K, V, O once = 4 x 1,024 = 4,096 B (the compulsory bytes: no schedule moves less)
#   DMA: 5 loads (Q; K and V per key tile) + 1 store (O) = 6 x 64 = 384, + 4,096 / 32 = 128 -> 512 cycles
#   TensorCore: Q.K^T 1 x ceil(48/24)=2 x 64 rows = 128, P.V ceil(48/16)=3 x 1 x 64 = 192; then
#               Q.K^T 1 x 1 x 64 = 64, P.V 1 x 1 x 64 = 64 -> 448 cycles
#   vector: first key tile (64 x 48 = 3,072 scores): max, subtract, exp, sum = 4 x 3,072 / 32 = 384; second
#           (1,024 scores, 64 rows, O 64 x 16 = 1,024): new max 32, max-merge 2, alpha 2, exp(alpha) 2, max 2,
#           subtract 32, exp 32, sum x alpha 2, sum 32, O x alpha 32 = 170; O / l 1,024 / 32 = 32 -> 586 cycles
#   estimated cycles max(DMA 512, TensorCore + vector 448 + 586) = 1,034
# kv-outer br=32 bc=64 (cycles' pick): one key tile of 64 keys, two row tiles of 32 rows.
#   traffic: K and V once (1,024 B each), per row tile Q loaded and O, M, L stored (512 + 512 + 32 + 32):
#            2,048 + 2 x 1,088 = 4,224 B
#   DMA: 4 loads (K, V, Q twice) + 6 stores (O, M, L twice) = 10 x 64 = 640, + 4,224 / 32 = 132 -> 772 cycles
#   TensorCore per row tile: Q.K^T 1 x ceil(64/24)=3 x 32 = 96, P.V ceil(64/16)=4 x 1 x 32 = 128 -> 2 x 224 = 448
#   vector per row tile: 32 x 64 = 2,048 scores: 4 x 2,048 / 32 = 256; O / L 512 / 32 = 16 -> 2 x 272 = 544
#   estimated cycles max(772, 448 + 544 = 992) = 992
# So traffic ranks q-outer first (4,096 < 4,224 B) and cycles ranks kv-outer first (992 < 1,034).
# At 32 both pick the one-tile q-outer 32x32: traffic the compulsory 2,048 B; DMA 4 transfers x 64 + 2,048 / 32 =
# 320; TensorCore 1 x 2 x 32 + 2 x 1 x 32 = 128; vector 4 x 1,024 / 32 + 512 / 32 = 144; cycles max(320, 272) = 320.
TRAFFIC_PICKS = [("q-outer", 32, 32, 2_048, 320), ("q-outer", 64, 48, 4_096, 1_034)]
CYCLES_PICKS = [("q-outer", 32, 32, 2_048, 320), ("kv-outer", 32, 64, 4_224, 992)]


def _sweep_json(tmp_path, capsys, objective: str | None, *extra: str) -> dict:
    out = tmp_path / f"{objective}.json"
    argv = ["shapes", SPEC, "--vary", VARY, "--sram", SRAM, "--quiet", "--json", str(out), *extra]
    if objective is not None:
        argv += ["--objective", objective]
    assert main(argv) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def _picks(data: dict) -> list[tuple]:
    return [(s["best"]["kind"], s["best"]["tiles"]["br"], s["best"]["tiles"]["bc"], s["traffic_bytes"], s["cycles"])
            for s in data["shapes"]]


def test_traffic_and_cycles_pick_different_schedules_at_64(tmp_path, capsys):
    by_traffic = _sweep_json(tmp_path, capsys, "traffic", "--max-loss", "0%")
    by_cycles = _sweep_json(tmp_path, capsys, "cycles", "--max-loss", "0%")
    assert _picks(by_traffic) == TRAFFIC_PICKS
    assert _picks(by_cycles) == CYCLES_PICKS
    assert (by_traffic["objective"], by_cycles["objective"]) == ("traffic", "cycles")
    # the losses are in the objective's figure: by traffic each length's best is its own reference
    assert [s["best_traffic_bytes"] for s in by_traffic["shapes"]] == [2_048, 4_096]
    # by traffic one template (a one-row-tile q-outer: Q, K, V, O once at both lengths) serves both within 0 %:
    # one row; by cycles 32 and 64 need their own schedules: two rows
    assert [(e["lo"], e["hi"]) for e in by_traffic["dispatch"]] == [(32, 64)]
    assert all(s["dispatched_traffic_bytes"] == s["traffic_bytes"] for s in by_traffic["shapes"])
    assert [(e["lo"], e["hi"]) for e in by_cycles["dispatch"]] == [(32, 32), (64, 64)]
    assert all(s["dispatched_cycles"] == s["cycles"] for s in by_cycles["shapes"])


def test_the_default_objective_is_cycles(tmp_path, capsys):
    assert _picks(_sweep_json(tmp_path, capsys, None)) == CYCLES_PICKS


def test_the_text_says_what_the_losses_are_in(capsys):
    assert main(["shapes", SPEC, "--vary", VARY, "--sram", SRAM, "--quiet", "--objective", "traffic"]) == 0
    out = capsys.readouterr().out
    assert "loss (traffic)" in out and "ranked by traffic" in out and "q-outer br64 bc48" in out


# ------------------------------------------------------------------------------------------ against a brute force
def _brute_force_best(problem, hardware, objective: str):
    """Every kind x every tile candidate of `search_attention`'s grid, ranked by the objective's key written out
    here (objective.py's module docstring): the first of the least key in (kind, br, bc) order."""
    from dsasim.architect.model.attention import analyze_attention
    from dsasim.architect.nests.attention_schedule import ATTENTION_KINDS, AttentionSchedule
    from dsasim.architect.search.attention_search import attention_tiles, energy_pj_of_analysis

    best, best_key, best_figure = None, None, None
    for kind in ATTENTION_KINDS:
        for br in attention_tiles(problem.n, hardware.tensorcore_in_channels):
            for bc in attention_tiles(problem.m, hardware.tensorcore_out_channels):
                a = analyze_attention(AttentionSchedule(problem, kind, br, bc), hardware)
                if a.peak_sram_bytes > hardware.sram_bytes:
                    continue
                t, c, pk = a.traffic_bytes, a.estimated_cycles, a.peak_sram_bytes
                e = energy_pj_of_analysis(a, hardware)
                key, figure = {"traffic": ((t, c, pk), t), "cycles": ((c, t, pk), c),
                               "energy": ((e, c, t, pk), e), "edp": ((e * c, e, t, pk), e * c)}[objective]
                if best_key is None or key < best_key:
                    best, best_key, best_figure = (kind, br, bc), key, figure
    return best, best_figure


@pytest.mark.parametrize("objective", ["traffic", "cycles", "energy", "edp"])
def test_each_length_best_equals_a_brute_force_by_the_objective(objective):
    import dataclasses

    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.studies.attention_shapes import sweep_attention_shapes
    from dsasim.hardware import load_hardware

    hardware = dataclasses.replace(load_hardware("blog"), sram_bytes=48 * 1024)
    problem = parse_attention("attention:h=4,hkv=2,n=200,m=200,d=32,causal=1")
    lengths = [40, 100, 200]
    sweep = sweep_attention_shapes(problem, "n+m", lengths, hardware, 0.05, objective)
    assert sweep.objective == objective
    for point, length in zip(sweep.points, lengths):
        expected, figure = _brute_force_best(dataclasses.replace(problem, n=length, m=length), hardware, objective)
        nest = point.nest
        assert (nest["kind"], nest["tiles"]["br"], nest["tiles"]["bc"]) == expected, (objective, length)
        assert point.reference == pytest.approx(figure, rel=1e-12)
    # the dispatch keeps every length within 5 % of its best in the objective's figure
    for i, point in enumerate(sweep.points):
        assert sweep.cost[sweep.dispatched(i)][i] <= 1.05 * point.reference * (1 + 1e-12)


def test_every_objective_has_a_figure_for_attention_and_a_json_name():
    from dsasim.architect.search.objective import OBJECTIVES
    from dsasim.architect.studies.attention_shapes import _FIGURE_OF
    from dsasim.architect.studies.shapes import FIGURE_AXES, FIGURE_FIELDS

    primaries = {o.primary for o in OBJECTIVES.values()}
    assert primaries <= set(_FIGURE_OF) and primaries <= set(FIGURE_FIELDS) and primaries <= set(FIGURE_AXES)


# ----------------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("argv, words", [
    (["shapes", SPEC, "--vary", VARY, "--objective", "joules"], "invalid choice: 'joules'"),
    (["shapes", "gemm:m=64,n=256,k=256", "--vary", "m=16:32:16", "--objective", "traffic"],
     "--objective traffic applies to attention targets"),
    # causal: the keys must cover the queries; n alone past m, or m alone below n, is no attention
    (["shapes", "attention:h=2,n=64,d=16,causal=1", "--vary", "n=64,128"], "causal with m=64 keys < n=128"),
    (["shapes", "attention:h=2,n=64,d=16,causal=1", "--vary", "m=32,64"], "causal with m=32 keys < n=64"),
    (["shapes", SPEC, "--vary", "n+m="], "give DIM=LO:HI[:STEP] or DIM=A,B,C"),
    (["shapes", SPEC, "--vary", "n+m=32,,64"], "--vary value"),
    (["shapes", SPEC, "--vary", "n+m=32,64,32"], "a value is given twice"),
    (["shapes", SPEC, "--vary", "h=1,2"], "attention varies n, m, n+m"),
])
def test_bad_input_is_one_line(argv, words, capsys):
    one_line_error(argv, capsys, words)


def test_the_library_refuses_unknown_objectives_and_unordered_lengths():
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.search.objective import UnknownObjectiveError
    from dsasim.architect.studies.attention_shapes import sweep_attention_shapes
    from dsasim.hardware import load_hardware

    hw, p = load_hardware("blog"), parse_attention(SPEC)
    with pytest.raises(UnknownObjectiveError, match="unknown objective 'joules'"):
        sweep_attention_shapes(p, "n+m", [32, 64], hw, objective="joules")
    with pytest.raises(ValueError, match="lengths must increase, each given once"):
        sweep_attention_shapes(p, "n+m", [64, 32], hw)
    with pytest.raises(ValueError, match="lengths must increase, each given once"):
        sweep_attention_shapes(p, "n+m", [32, 32], hw)


def test_the_plot_draws_the_objectives_figure(monkeypatch, tmp_path):
    import dataclasses

    import dsasim.view.plot as plot_module
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.studies.attention_shapes import sweep_attention_shapes
    from dsasim.hardware import load_hardware

    hw = dataclasses.replace(load_hardware("blog"), sram_bytes=8 * 1024)
    sweep = sweep_attention_shapes(parse_attention(SPEC), "n+m", [32, 64], hw, 0.0, "traffic")
    drawn = {}
    monkeypatch.setattr(plot_module, "_save", lambda fig, path: drawn.setdefault("fig", fig) and path)
    plot_module.plot_shapes(sweep, tmp_path / "s.png")
    bottom = drawn["fig"].axes[1]
    # by traffic the curves are bytes: the bests 2,048 and 4,096 B (derived above), not their cycles
    assert list(bottom.lines[0].get_ydata()) == [2_048, 4_096]
    assert bottom.get_ylabel() == "DDR traffic (bytes)"
