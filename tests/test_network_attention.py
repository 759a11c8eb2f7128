"""Issue 29: an attention group of a network evaluated as one fused entry (its best schedule by the attention
search) with fusion on, as its unfused layers with --no-fusion. Expected totals come from an independent
computation (the non-attention layers of the unfused result plus `search_attention`'s best per group) and the
compulsory traffic derived by hand."""

from __future__ import annotations

import json

from dsasim.architect.problems.attention import AttentionProblem
from dsasim.architect.search.attention_search import search_attention
from dsasim.architect.studies.network import ATTENTION, KV_CACHE, load_network
from dsasim.architect.studies.network_eval import evaluate_network
from dsasim.architect.studies.sweep import estimate_network_sweep_work
from dsasim.cli import main
from dsasim.hardware import load_hardware

BLOG = load_hardware("blog")  # 1-byte words, 16 x 24 MACs a cycle
SMALL = "tests/data/small_transformer.py:SmallTransformer"
SIZES = [16 << 10, 64 << 10]


def _results(fusion: bool):
    return evaluate_network(load_network(SMALL), [BLOG], SIZES, fusion=fusion)[0]


def test_fused_traffic_is_the_other_layers_plus_the_attention_searchs_best_per_group():
    net = load_network(SMALL)
    assert len(net.attentions) == 2
    grouped = {i for g in net.attentions for i in g.members}
    for fused, unfused in zip(_results(True), _results(False)):
        # --no-fusion: every layer its own entry (the three of each group among them)
        assert [x.layer.name for x in unfused.layers] == [layer.name for layer in net.layers]
        others = sum(x.traffic_bytes for i, x in enumerate(unfused.layers) if i not in grouped)
        best = 0
        for g in net.attentions:
            problem = AttentionProblem(b=g.b, h=g.h, hkv=g.hkv, n=g.n, m=g.m, d=g.d, causal=g.causal)
            best += search_attention(problem, BLOG, fused.sram_bytes).best.traffic_bytes
        assert fused.traffic_bytes == others + best
        entries = [x for x in fused.layers if x.layer.kind == ATTENTION]
        assert len(entries) == 2 and len(fused.layers) == len(net.layers) - 2 * 2
        assert fused.traffic_bytes < unfused.traffic_bytes  # S and P no longer go through DDR


def test_fused_entries_reach_the_compulsory_traffic_by_hand():
    mha, sdpa = (x for x in _results(True)[1].layers if x.layer.kind == ATTENTION)
    # the MHA: b=2, h=hkv=4, n=m=16, d=16, 1-byte words: Q, K, V, O each 2*4*16*16 = 2048 B, read/written once
    assert mha.traffic_bytes == mha.compulsory_bytes == 4 * 2048
    # the causal GQA sdpa: Q and O 2*4*16*16 = 2048 B each, K and V 2*2*16*16 = 1024 B each
    assert sdpa.traffic_bytes == 2 * 2048 + 2 * 1024
    assert sdpa.layer.shape == "attention:b=2,h=4,hkv=2,n=16,m=16,d=16,causal=1"
    assert sdpa.schedule["kind"] in ("q-outer", "kv-outer", "store-p", "store-s", "unfused")
    # K and V are the KV cache in the per-token split (role of the entry's tensors)
    assert dict(sdpa.layer.roles) == {"K": KV_CACHE, "V": KV_CACHE}


def test_work_estimate_counts_the_attention_searches():
    net = load_network(SMALL)
    fused = estimate_network_sweep_work(net, [BLOG], 2, fusion=True)
    unfused = estimate_network_sweep_work(net, [BLOG], 2, fusion=False)
    assert "2 attention groups" in fused.what and "attention" not in unfused.what


def test_cli_json_names_the_best_schedule_and_no_fusion_keeps_the_layers(tmp_path, capsys):
    assert main(["network", SMALL, "--sram", "64KiB", "--json", str(tmp_path / "n.json"), "--quiet"]) == 0
    data = json.loads((tmp_path / "n.json").read_text())
    entries = [x for x in data["layers"] if x["kind"] == ATTENTION]
    assert len(entries) == 2 and all(x["schedule"]["kind"] and x["op"].startswith("attention ") for x in entries)
    capsys.readouterr()
    assert main(["network", SMALL, "--sram", "64KiB", "--no-fusion", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "(unfused: mha.scores, mha.softmax, mha.output)" in text


def test_sweep_sram_network_in_a_process_pool_fuses_the_same(tmp_path):
    args = ["sweep-sram", "--network", SMALL, "--sizes", "16KiB,64KiB", "--quiet", "--json"]
    assert main(args + [str(tmp_path / "one.json")]) == 0
    assert main(args + [str(tmp_path / "pool.json"), "--executor", "process", "--jobs", "2"]) == 0
    one = json.loads((tmp_path / "one.json").read_text())
    assert one == json.loads((tmp_path / "pool.json").read_text())
    expected = [r.traffic_bytes for r in _results(True)]
    assert [p["traffic_bytes"] for p in one["points"]] == expected


def test_an_attention_mask_is_loaded_beside_the_fused_schedule_and_added_on_chip():
    from dsasim.architect.studies.network import import_network
    from tests.test_llm_layers import Sdpa

    net = import_network(Sdpa(mask=True), (2, 8, 64))
    entry = next(x for x in evaluate_network(net, [BLOG], [1 << 20])[0][0].layers if x.layer.kind == ATTENTION)
    best = search_attention(AttentionProblem(b=2, h=4, hkv=4, n=8, m=8, d=16), BLOG, 1 << 20).best
    # q = k = v (2, 4, 8, 16): Q, K, V, O each 2*4*8*16 = 1024 B at 1 MiB (all on chip, read once); the (8, 8)
    # mask is 64 B loaded beside it
    assert best.traffic_bytes == 4 * 1024
    assert entry.traffic_bytes == entry.compulsory_bytes == 4 * 1024 + 64
    # the mask added to each of the 2*4*8*8 = 512 scores: one lane operation each, beside the schedule's
    assert entry.access_counts.vector_lane_ops == best.vector_lane_ops + 512
    assert entry.cycles == best.estimated_cycles + -(-512 // BLOG.vector_lanes)
