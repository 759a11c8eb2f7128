"""Attention's studies (issue 29): `sweep-sram attention:...` over SRAM sizes, `shapes attention:...` over sequence
lengths, `search attention:... --confirm 1` through the trace and the timing simulator, and where the vector unit
stalls the TensorCore. Expected figures are derived by hand in the comments."""

from __future__ import annotations

import json

import pytest

from dsasim.cli import main
from tests.cli_helpers import one_line_error

# b=1, two query heads sharing one K/V head, 256 queries and keys, d=64, on `blog` (1-byte words):
#   Q = O = 2 heads x 256 x 64 = 32,768 B each; K = V = 256 x 64 = 16,384 B each;
#   compulsory = Q + K + V + O = 32,768 + 16,384 + 16,384 + 32,768 = 98,304 B.
SPEC = "attention:b=1,h=2,hkv=1,n=256,m=256,d=64"
COMPULSORY = 98_304


# ------------------------------------------------------------------------------------------------- sweep-sram
def _sweep_json(tmp_path, capsys, *extra: str) -> dict:
    out = tmp_path / "sweep.json"
    assert main(["sweep-sram", SPEC, "--sizes", "16KiB:1MiB", "--json", str(out), "--quiet", *extra]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def test_sweep_traffic_falls_to_the_compulsory_bytes_and_prices_each_size(tmp_path, capsys):
    data = _sweep_json(tmp_path, capsys)
    points = data["points"]
    assert [p["sram_bytes"] for p in points] == [2 ** k * 1024 for k in range(4, 11)]  # 16 KiB .. 1 MiB, x2
    traffic = [p["traffic_bytes"] for p in points]
    assert all(a >= b for a, b in zip(traffic, traffic[1:])), traffic  # more SRAM never moves more
    assert all(p["compulsory_bytes"] == COMPULSORY for p in points)
    # at 1 MiB every tile holds the whole head (256 x 256 tiles: Q, K, V, O and S of 2 heads fit): compulsory
    assert points[-1]["traffic_bytes"] == COMPULSORY
    # at 16 KiB the best is q-outer with 32 query rows: Q loaded and O stored once (32,768 B each), K and V
    # loaded once per row tile, shared by the group's two heads: 256 / 32 = 8 row tiles x (16,384 + 16,384) =
    # 262,144 B; in all 32,768 + 262,144 + 32,768 = 327,680 B
    first = points[0]
    assert (first["schedule"]["kind"], first["schedule"]["br"]) == ("q-outer", 32)
    assert first["traffic_bytes"] == 327_680
    for p in points:  # every point carries its energy at that size and the schedule's cycles split
        assert p["energy_pj"] > 0 and p["area_mm2"] > 0 and p["cycles_source"] == "estimate"
        assert p["cycles"] == max(p["dma_cycles"], p["tensorcore_cycles"] + p["vector_cycles"])
    areas = [p["area_mm2"] for p in points]
    assert areas == sorted(areas) and areas[0] < areas[-1]  # the SRAM's area grows with its size
    assert set(data["sizing"]) >= {"least_energy_sram_bytes", "least_edp_sram_bytes"}


def test_sweep_by_energy_ranks_each_size_by_its_own_energy(tmp_path, capsys):
    from dsasim.architect.studies.attention_sweep import sweep_attention
    from dsasim.architect.studies.target_kinds import target_of
    from dsasim.hardware import load_hardware

    target = target_of(SPEC, load_hardware("blog"))
    by_energy = sweep_attention(target, [32 * 1024, 64 * 1024], "energy")
    by_traffic = sweep_attention(target, [32 * 1024, 64 * 1024], "traffic")
    for e, t in zip(by_energy.choices, by_traffic.choices):
        assert e.energy.energy_pj <= t.energy.energy_pj  # ranked by energy: never more than traffic's pick
        assert e.traffic_bytes >= t.traffic_bytes  # and traffic's pick never moves more
    assert by_energy.objective == "energy"


def test_sweep_text_names_the_schedule_and_the_sizing_answers(capsys):
    assert main(["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "q-outer 32x48" in out and "327,680" in out and "least energy per inference at" in out


@pytest.mark.parametrize("argv, words", [
    (["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--no-simulate"], "--no-simulate does not apply"),
    (["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--no-slide"], "--no-slide does not apply"),
    (["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--objective", "joules"], "objective"),
])
def test_sweep_refusals_are_one_line(argv, words, capsys):
    one_line_error(argv, capsys, words)


# ------------------------------------------------------------------------------------------------------ shapes
def _shapes_json(tmp_path, capsys, *extra: str) -> dict:
    out = tmp_path / "shapes.json"
    code = main(["shapes", "attention:b=1,h=2,hkv=1,n=256,d=64", "--vary", "n+m=64:512:64", "--sram", "64KiB",
                 "--json", str(out), "--quiet", *extra])
    assert code == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def test_shapes_dispatch_covers_every_length_within_the_loss(tmp_path, capsys):
    data = _shapes_json(tmp_path, capsys)
    shapes = data["shapes"]
    assert [s["n+m"] for s in shapes] == list(range(64, 513, 64))
    assert all(s["shape"].endswith(f"n={s['n+m']},m={s['n+m']},d=64") for s in shapes)  # both lengths move
    # the table's ranges are contiguous and cover 64..512 in order
    ranges = [(e["lo"], e["hi"]) for e in data["dispatch"]]
    assert ranges[0][0] == 64 and ranges[-1][1] == 512
    assert all(prev_hi < lo for (_, prev_hi), (lo, _) in zip(ranges, ranges[1:]))
    for s in shapes:
        assert 0 <= s["dispatched_loss"] <= 0.05 + 1e-9
        assert s["dispatched_cycles"] == pytest.approx(s["cycles"] * (1 + s["dispatched_loss"]))
        assert s["single_loss"] >= 0  # each length's best is the least any template costs it
        assert s["tensorcore_utilization"] <= 1


def test_shapes_with_no_loss_allowed_dispatches_each_length_its_optimum(tmp_path, capsys):
    data = _shapes_json(tmp_path, capsys, "--max-loss", "0%")
    assert all(s["dispatched_cycles"] == s["cycles"] for s in data["shapes"])


def test_attention_template_rounds_to_tensorcore_blocks_and_clamps_to_the_lengths():
    from dsasim.architect.model.attention import analyze_attention
    from dsasim.architect.nests.attention_schedule import AttentionSchedule
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.studies.attention_shapes import _cost, _generic
    from dsasim.architect.studies.shapes import ShapePoint
    from dsasim.hardware import load_hardware

    hw = load_hardware("blog")  # TensorCore block 16 rows (in) x 24 keys (out)
    p = parse_attention("attention:h=2,hkv=1,n=64,d=64")
    point = ShapePoint(100, p, {"kind": "kv-outer", "tiles": {"br": 100, "bc": 128}}, 1, 1, 1.0)
    # 100 rows -> 7 blocks of 16 = 112; 128 keys -> 6 blocks of 24 = 144
    assert _generic(point, hw)["tiles"] == {"br": 112, "bc": 144}
    # a 96 x 96 template on 64 queries and 64 keys runs as 64 x 64 tiles; its TensorCore cycles by hand: per
    # head Q.K^T ceil(64/16) x ceil(64/24) x 64 rows = 4 x 3 x 64 = 768 and P.V the same, 2 heads: 3,072
    a = analyze_attention(AttentionSchedule(p, "q-outer", 64, 64), hw)
    assert a.tensorcore_cycles == 3_072
    assert _cost({"kind": "q-outer", "tiles": {"br": 96, "bc": 96}, "generic": True}, p, hw) == a.estimated_cycles
    tiny = __import__("dataclasses").replace(hw, sram_bytes=1024)
    assert _cost({"kind": "q-outer", "tiles": {"br": 96, "bc": 96}, "generic": True}, p, tiny) == float("inf")


@pytest.mark.parametrize("argv, words", [
    (["shapes", SPEC, "--vary", "d=16:64:16"], "attention varies n, m, n+m"),
    (["shapes", "attention:h=2,n=64,d=16,causal=1", "--vary", "n=32:128:32"], "causal with m=64 keys < n=96 queries"),
    (["shapes", SPEC, "--vary", "n=64:128:64", "--jobs", "4"], "--jobs and --force do not apply"),
    (["shapes", SPEC, "--vary", "n=64:128:64", "--hardware", "blog-l1"], "one-level"),
])
def test_shapes_refusals_are_one_line(argv, words, capsys):
    one_line_error(argv, capsys, words)


# ------------------------------------------------------------------------------------- --confirm 1 and timing
# One q-outer tile of 256 query rows x 16 keys, d=16, one head, on blog (1-byte words, DMA setup 64 cycles and
# 32 B/cycle on one shared port, TensorCore 16 x 24 block, 32 vector lanes). By hand:
#   load Q  256 x 16 = 4,096 B: 64 + 128 = 192 cycles   [0, 192)      TensorCore idle: "load:Q" 192
#   load K   16 x 16 =   256 B: 64 +   8 =  72 cycles   [192, 264)    "load:K" 72 (V loads under Q.K^T)
#   Q.K^T   ceil(16/16) x ceil(16/24) x 256 rows = 256  [264, 520)
#   softmax row max, subtract, exp: 3 x 256 x 16 / 32 lanes = 3 x 128 = 384  [520, 904)   "vector" 384
#   P.V     ceil(16/16) x ceil(16/24) x 256 rows = 256  [904, 1160)   (the row sum, 128, runs beside it)
#   O / l   4,096 / 32 = 128, store O 4,096 B: 192      [1160, 1480)  "drain" 320
# cycles 1,480; TensorCore busy 512; vector busy 5 x 128 = 640; stalls sum to 1,480 - 512 = 968.
STALL_SPEC = "attention:h=1,n=256,m=16,d=16"
STALL_TIMING = {"cycles": 1_480, "tensorcore_busy_cycles": 512, "vector_busy_cycles": 640,
                "tensorcore_idle_cycles": 968, "vector_stall_cycles": 384,
                "stall_cycles": {"drain": 320, "load:K": 72, "load:Q": 192, "vector": 384}}


def _attention_kernels(kind: str):
    from dsasim.kernels.attention_kernel import run_attention
    return run_attention if kind == "attention" else None


def test_confirmed_timing_shows_the_tensorcore_waiting_for_the_softmax():
    from dsasim.architect.model.attention import analyze_attention
    from dsasim.architect.nests.attention_schedule import AttentionSchedule
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.studies.attention_timing import confirm_attention
    from dsasim.hardware import load_hardware
    from dsasim.kernels.attention_kernel import run_attention

    hw = load_hardware("blog")
    a = analyze_attention(AttentionSchedule(parse_attention(STALL_SPEC), "q-outer", 256, 16), hw)
    timing = confirm_attention(a, hw, run_attention)
    got = timing.to_json()
    assert {k: got[k] for k in STALL_TIMING} == STALL_TIMING


def test_cli_confirm_reports_simulated_cycles_and_the_vector_stall(tmp_path, capsys, monkeypatch):
    import dsasim.cli.search as search_cli

    monkeypatch.setattr(search_cli, "kernel_runner", _attention_kernels)  # main's venv predates the entry point
    path = tmp_path / "a.json"
    # at 1 MiB the one-tile q-outer (all 256 rows, all 16 keys) is the best by traffic (compulsory) and cycles
    assert main(["search", STALL_SPEC, "--sram", "1MiB", "--objective", "cycles", "--confirm", "1", "--json",
                 str(path)]) == 0
    out = capsys.readouterr().out
    data = json.loads(path.read_text())
    best = data["best"]["schedule"]
    assert (best["kind"], best["br"], best["bc"]) == ("q-outer", 256, 16)
    timing = data["confirmation"]["timing"]
    assert data["confirmation"]["trace_equals_model"] is True
    assert {k: timing[k] for k in STALL_TIMING} == STALL_TIMING
    assert "simulated    1,480 cycles" in out and "waiting for the vector unit 384" in out


def test_confirm_raises_when_the_trace_differs_from_the_model():
    from dsasim.architect.model.attention import analyze_attention
    from dsasim.architect.nests.attention_schedule import AttentionSchedule
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.studies.attention_timing import confirm_attention
    from dsasim.hardware import load_hardware
    from dsasim.kernels.attention_kernel import run_attention

    hw = load_hardware("blog")
    p = parse_attention(STALL_SPEC)
    other = analyze_attention(AttentionSchedule(p, "unfused", 256, 16), hw)  # a model of another schedule
    wrong = __import__("dataclasses").replace(other, schedule=AttentionSchedule(p, "q-outer", 256, 16))
    with pytest.raises(AssertionError, match="attention model and trace differ .* loaded_bytes"):
        confirm_attention(wrong, hw, run_attention, simulate=False)


@pytest.mark.parametrize("argv, words", [
    (["search", STALL_SPEC, "--confirm", "2"], "--confirm 2 does not apply to attention"),
    (["search", STALL_SPEC, "--no-simulate"], "--no-simulate does not apply to attention without --confirm 1"),
])
def test_confirm_refusals_are_one_line(argv, words, capsys):
    one_line_error(argv, capsys, words)


def test_confirm_without_a_registered_kernel_is_refused(capsys, monkeypatch):
    import dsasim.cli.search as search_cli

    monkeypatch.setattr(search_cli, "kernel_runner", lambda kind: None)
    one_line_error(["search", STALL_SPEC, "--confirm", "1"], capsys, "no attention kernel is registered")


def test_confirmed_choice_carries_the_simulated_cycles():
    from dsasim.architect.studies.target import SearchOptions
    from dsasim.architect.studies.target_kinds import target_of
    from dsasim.hardware import load_hardware

    target = target_of(STALL_SPEC, load_hardware("blog"))
    choice = target.search(1 << 20, "cycles", SearchOptions(confirm=1, kernels=_attention_kernels))
    assert (choice.cycles, choice.cycles_source, choice.traced) == (1_480, "simulated", True)  # by hand, above
    plain = target.search(1 << 20, "cycles", SearchOptions())
    assert plain.cycles_source == "estimate" and plain.timing is None and not plain.traced
