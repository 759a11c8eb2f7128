"""Issue 29: plots/attention_dispatch.py, the sequence-length dispatch figure — the data it plots, checked against
`search_attention` and `analyze_attention` directly on its --quick range (Llama 3 8B's attention, causal prefill,
128..512 tokens, 256 KiB on blog)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

PLOT = Path(__file__).resolve().parent.parent / "plots" / "attention_dispatch.py"


@pytest.fixture(scope="module")
def figure():
    spec = importlib.util.spec_from_file_location("attention_dispatch", PLOT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lengths_are_two_per_octave_in_whole_blocks(figure):
    # 128 x sqrt(2)^k rounded to 16: 181.0 -> 176, 362.0 -> 368, 724.1 -> 720, 1448.2 -> 1456, 2896.3 -> 2896,
    # 5792.6 -> 5792; the powers of two stay
    assert figure.LENGTHS == [128, 176, 256, 368, 512, 720, 1024, 1456, 2048, 2896, 4096, 5792, 8192]
    assert figure.QUICK_LENGTHS == [128, 176, 256, 368, 512]


def test_the_plotted_data_equals_the_search_per_length(figure, tmp_path):
    from dsasim.architect.model.attention import analyze_attention
    from dsasim.architect.nests.attention_schedule import AttentionSchedule
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.search.attention_search import search_attention
    from dsasim.hardware import load_hardware

    sram = 256 * 1024
    (panel,) = figure.dispatch_figures(figure.QUICK_LENGTHS, figure.QUICK_SRAM_SIZES, workers=1)
    hw = dataclasses.replace(load_hardware("blog"), sram_bytes=sram)
    base = parse_attention(figure.SPEC)
    assert panel["sram_bytes"] == sram and [p["length"] for p in panel["points"]] == figure.QUICK_LENGTHS
    single = panel["templates"][panel["single"]]
    for point in panel["points"]:
        length = point["length"]
        problem = dataclasses.replace(base, n=length, m=length)
        best = search_attention(problem, hw, sram, "traffic").best
        s = best.schedule
        assert point["best"] == {"kind": s.kind, "br": s.br, "bc": s.bc}
        assert point["best_traffic_bytes"] == best.traffic_bytes
        # compulsory, 1-byte words: Q and O 32 heads x L x 128, K and V 8 heads x L x 128: 10,240 B per token
        assert point["compulsory_bytes"] == 10_240 * length <= point["best_traffic_bytes"]
        # the single generic schedule, its tiles clamped to the length, analysed here
        a = analyze_attention(AttentionSchedule(problem, single["kind"], min(single["br"], length),
                                                min(single["bc"], length)), hw)
        assert a.peak_sram_bytes <= sram and point["single_traffic_bytes"] == a.traffic_bytes
        # within 0 %: the dispatched schedule moves no more than the length's best
        t = panel["templates"][point["dispatched"]]
        d = analyze_attention(AttentionSchedule(problem, t["kind"], min(t["br"], length), min(t["bc"], length)), hw)
        assert d.peak_sram_bytes <= sram and d.traffic_bytes <= best.traffic_bytes
    # the dispatch rows cover the lengths in order, each length in the row of its dispatched schedule
    rows = panel["dispatch"]
    assert rows[0]["lo"] == 128 and rows[-1]["hi"] == 512
    for point in panel["points"]:
        (row,) = [r for r in rows if r["lo"] <= point["length"] <= r["hi"]]
        assert row["schedule"] == point["dispatched"]
    png = figure.plot([panel], tmp_path / "dispatch.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
