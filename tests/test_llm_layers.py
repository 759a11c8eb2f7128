"""Issue 29, LLM inference: attention, RMSNorm, RoPE and SwiGLU read from torch.fx into modelled layers; the decoder
layer presets in prefill and decode; the per-token figures. Every expected figure is derived by hand in a comment."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dsasim.architect.nests.loopnest import MatmulProblem
from dsasim.architect.studies.network import import_network, load_network
from dsasim.architect.studies.network_eval import evaluate_network
from dsasim.architect.studies.network_tokens import TokenFigures
from dsasim.cli import main
from dsasim.hardware import load_hardware
from tests.cli_helpers import one_line_error

BLOG = load_hardware("blog")  # 1-byte words, 16 x 24 MACs a cycle, 32 DDR bytes a cycle, 1 GHz


# ------------------------------------------------------------------------------------------- attention
class Sdpa(nn.Module):
    """q (2, 4, 8, 16) over k, v (2, 2, 8, 16): grouped-query (2 query heads per K/V head), causal."""

    def __init__(self, how: str = "gqa", mask: bool = False) -> None:
        super().__init__()
        self.how = how
        if mask:
            self.register_buffer("mask", torch.zeros(8, 8))
        self.has_mask = mask

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x.view(2, 8, 4, 16).transpose(1, 2)
        k = v = q[:, :2]
        if self.has_mask:
            return F.scaled_dot_product_attention(q, q, q, attn_mask=self.mask)
        if self.how == "repeat":  # GQA by hand: each K/V head repeated for its 2 query heads
            k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


@pytest.mark.parametrize("how", ["gqa", "repeat"])
def test_sdpa_is_scores_softmax_output_per_kv_head_grouped(how):
    net = import_network(Sdpa(how), (2, 8, 64))
    assert not net.of_kind("unmodelled")
    scores, softmax, output = net.layers
    # per (batch 2, K/V head 2) = 4 products; the 2 query heads of a group stack into m: 2 x 8 query rows
    assert (scores.problem, scores.count) == (MatmulProblem(m=16, n=8, k=16), 4)
    assert (output.problem, output.count) == (MatmulProblem(m=16, n=16, k=8), 4)
    # S has b*h*n*m = 2*4*8*8 = 512 scores: the scale and the causal select, one lane op each, on S's tile
    assert scores.epilogue_ops == 2 * 512 and "no saving" in scores.note
    # softmax reads and writes S and costs 3 lane ops per score (the import's norms)
    assert (softmax.kind, softmax.read_elements, softmax.write_elements, softmax.vector_ops) == (
        "vector", 512, 512, 1536)
    (group,) = net.attentions
    assert group.members == (0, 1, 2)
    assert group.spec() == "attention:b=2,h=4,hkv=2,n=8,m=8,d=16,causal=1"


def test_an_attention_mask_is_loaded_and_added_on_the_scores():
    net = import_network(Sdpa(mask=True), (2, 8, 64))
    scores = net.layers[0]
    # no GQA: 2*4 = 8 products of (8 x 16) @ (16 x 8); 512 scores: scale and mask add; the (8, 8) mask loaded
    assert (scores.problem, scores.count) == (MatmulProblem(m=8, n=8, k=16), 8)
    assert (scores.epilogue_ops, scores.extra_read_elements) == (2 * 512, 64)
    assert net.attentions[0].masked and not net.attentions[0].causal


class Mha(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(64, 4, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, weights = self.mha(x, x, x)  # need_weights: the head-averaged weights are used below
        return out + weights.sum()


def test_multihead_attention_is_its_projections_the_attention_and_its_weights():
    net = import_network(Mha(), (2, 8, 64))
    assert not net.of_kind("unmodelled")
    layers = {x.name: x for x in net.layers}
    for part in ("q_proj", "k_proj", "v_proj", "out_proj"):  # 2 x 8 tokens through 64 x 64 weights, 64 biases
        assert layers[f"mha.{part}"].problem == MatmulProblem(m=16, n=64, k=64)
        assert layers[f"mha.{part}"].bias_elements == 64
    # 4 heads of 16: per (batch, head) 8 products of (8 x 16) @ (16 x 8)
    assert (layers["mha.scores"].problem, layers["mha.scores"].count) == (MatmulProblem(m=8, n=8, k=16), 8)
    # the averaged weights: P (2*4*8*8 = 512) read again, (2, 8, 8) = 128 written
    assert (layers["mha.weights"].read_elements, layers["mha.weights"].write_elements) == (512, 128)
    assert net.attentions[0].spec() == "attention:b=2,h=4,hkv=4,n=8,m=8,d=16"


def test_bert_matmul_softmax_matmul_is_one_attention_group_and_its_layers_unchanged():
    bert = load_network("bert-base-layer:seq=16")
    (group,) = bert.attentions
    assert [bert.layers[i].name for i in group.members] == ["matmul", "softmax", "matmul_1"]
    assert group.spec() == "attention:b=1,h=12,hkv=12,n=16,m=16,d=64"
    assert bert.layer("matmul").problem == MatmulProblem(m=16, n=16, k=64) and bert.layer("matmul").count == 12


# ------------------------------------------------------------------------------------ norms, RoPE, SwiGLU
class RmsByHand(nn.Module):
    def __init__(self, functional: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(64))
        self.functional = functional

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.functional:
            return F.rms_norm(x, (64,), self.weight, 1e-6)
        h = x.to(torch.float32)
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


@pytest.mark.parametrize("functional", [False, True])
def test_rms_norm_by_hand_is_one_layer_counted_as_f_rms_norm(functional):
    (layer,) = import_network(RmsByHand(functional), (2, 8, 64)).layers
    # x: 2*8*64 = 1024 elements read with the 64 weights, 1024 written, 3 lane ops per element (the norms' rule)
    assert (layer.op, layer.kind) == ("rms_norm", "vector")
    assert (layer.read_elements, layer.write_elements, layer.vector_ops, layer.weight_elements) == (
        1088, 1024, 3072, 64)


class Rope(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cos", torch.ones(8, 16))
        self.register_buffer("sin", torch.ones(8, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x.view(2, 8, 4, 16).transpose(1, 2)
        rotated = torch.cat((-q[..., q.shape[-1] // 2:], q[..., : q.shape[-1] // 2]), dim=-1)
        return q * self.cos + rotated * self.sin


def test_rope_rotate_half_is_one_layer():
    (layer,) = import_network(Rope(), (2, 8, 64)).layers
    # q: 1024 elements, cos and sin 8 x 16 = 128 each, read; 1024 written; per pair of elements 2 products by cos,
    # 2 by sin, 2 sums and 1 negation = 7: 7 * 1024 / 2 = 3584 lane ops
    assert layer.op == "rope"
    assert (layer.read_elements, layer.write_elements, layer.vector_ops) == (1280, 1024, 3584)


class SwiGlu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate, self.up = nn.Linear(64, 256, bias=False), nn.Linear(64, 256, bias=False)
        self.down = nn.Linear(256, 64, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def test_swiglu_gating_runs_on_the_gate_projections_tile_with_up_loaded():
    net = import_network(SwiGlu(), (2, 8, 64))
    assert [x.name for x in net.layers] == ["gate", "up", "down"]  # no vector layer for silu or the product
    gate = net.layer("gate")
    # 16 rows x 256: silu and the product, one lane op each per element; up's 4096 elements loaded
    assert (gate.epilogue_ops, gate.extra_read_elements, gate.fused) == (2 * 4096, 4096, ("silu", "mul"))
    assert not net.chains  # down needs up's result too: gate -> down is no chain


def test_a_users_small_transformer_in_a_file_has_no_unmodelled_layer():
    net = load_network("tests/data/small_transformer.py:SmallTransformer")
    assert not net.of_kind("unmodelled")
    assert [g.source for g in net.attentions] == ["MultiheadAttention", "scaled_dot_product_attention"]
    assert [x.op for x in net.layers].count("rope") == 2 and [x.op for x in net.layers].count("rms_norm") == 2


# -------------------------------------------------------------------------------------------- presets
# Llama 3 8B: hidden 4096, 32 query heads and 8 K/V heads of 128, FFN 14336 (SwiGLU), no biases. Weights of one layer:
# q and o 4096 x 4096 each, k and v 4096 x 1024 each, gate, up and down 4096 x 14336 each
LLAMA_LINEAR_WEIGHTS = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336  # 218,103,808
# plus the two RMSNorm weights (4096 each) and, in decode, the RoPE tables of the new position (cos and sin, 128
# each) read by each of the two rotations
LLAMA_DECODE_WEIGHTS = LLAMA_LINEAR_WEIGHTS + 2 * 4096 + 2 * 2 * 128


def test_llama_decode_layers_and_parameters():
    net = load_network("llama3-8b-layer:phase=decode,context=4096,batch=8")
    assert net.name == "llama3-8b-layer:phase=decode,context=4096,batch=8"
    assert (net.input_shape, net.tokens, net.model_layers) == ((8, 1, 4096), 8, 32)
    assert not net.of_kind("unmodelled")
    # one new token per sequence attends to its 4096 cached rows and itself: m = 4097; 4 query heads per K/V head
    assert net.attentions[0].spec() == "attention:b=8,h=32,hkv=8,n=1,m=4097,d=128"
    # the new K rows are stored into the cache by the rotation that made them, the new V rows by v_proj: no copy
    assert "kv_cache_append_1" in net.layer("v_proj").fused and not [x for x in net.layers if "append" in x.name]


@pytest.mark.parametrize("spec, says", [
    ("llama3-8b-layer:phase=sideways", "phase='sideways' is not one of prefill, decode"),
    ("llama3-8b-layer:phase=decode,seq=5", "seq applies only with phase=prefill"),
    ("llama3-8b-layer:phase=decode,context=8192", "context='8192' must be a whole number from 1 to 8191"),
    ("llama3-8b-layer:batch=0", "batch='0' must be a whole number from 1 to 4096"),
    ("llama3-8b-layer:heads=3", "llama3-8b-layer takes phase=prefill|decode"),
    ("llama3-8b-layer:batch=2,batch=3", "batch is given twice"),
    ("gpt2-layer:seq=1025", "seq='1025' must be a whole number from 1 to 1024"),
    ("resnet18:seq=3", "takes no parameters"),
    ("bert-base-layer:len=3", "bert-base-layer:seq=384"),
])
def test_bad_preset_parameters_say_what_is_wrong(spec, says):
    with pytest.raises(ValueError, match=None) as info:
        load_network(spec)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_a_preset_declares_its_parameters_consistently():
    from dsasim.architect.studies.network_models import PRESETS, NetworkPreset, PresetParameter

    llama = PRESETS["llama3-8b-layer"]
    with pytest.raises(ValueError, match="parameters and build_with come together"):
        NetworkPreset("x", llama.build, (1,), "x", parameters=llama.parameters)
    with pytest.raises(ValueError, match="declared twice"):
        NetworkPreset("x", llama.build, (1,), "x", parameters=llama.parameters + (PresetParameter("seq", 1, "s"),),
                      build_with=llama.build_with)
    with pytest.raises(ValueError, match="outside"):
        PresetParameter("batch", 0, "sequences")


def test_a_decoder_preset_refuses_an_input_shape():
    with pytest.raises(ValueError, match="takes its shapes from its parameters"):
        load_network("gpt2-layer", (1, 8, 768))


def test_bert_default_and_seq_names_are_unchanged():
    assert load_network("bert-base-layer").name == "bert-base-layer"
    assert load_network("bert-base-layer:seq=32").name == "bert-base-layer:seq=32"


def test_llama_decode_batch_1_bytes_per_token_by_hand():
    result = evaluate_network(load_network("llama3-8b-layer:phase=decode,context=4096,batch=1"), [BLOG],
                              [2 << 20])[0][0]
    f = result.per_token
    # weights stream once per step (1-byte words): all of them for the one token
    assert f.weights_bytes == LLAMA_DECODE_WEIGHTS == 218_112_512
    # KV cache per sequence: K and V of 4097 rows x 8 heads x 128 read, the new row of each (8 x 128) written
    assert f.kv_cache_bytes == 2 * 4097 * 8 * 128 + 2 * 8 * 128
    assert f.weights_bytes + f.kv_cache_bytes + f.activation_bytes == result.traffic_bytes
    # MACs: one token through the linear weights, and per query head 4097 x 128 for S and again for P·V
    assert f.macs == LLAMA_LINEAR_WEIGHTS + 32 * 2 * 4097 * 128
    # intensity near 1 MAC per byte: DDR time (bytes / 32) far above the TensorCore's (MACs / 384)
    assert f.bound == "memory" and f.memory_cycles == result.traffic_bytes / 32 and f.compute_cycles == f.macs / 384
    assert f.tokens_per_second == pytest.approx(1e9 / result.cycles)


def test_gpt2_prefill_weights_are_shared_by_every_token():
    result = evaluate_network(load_network("gpt2-layer:phase=prefill,seq=64"), [BLOG], [8 << 20])[0][0]
    f = result.per_token
    # 4 x 768 x 768 attention and 2 x 768 x 3072 FFN weights, biases 3 x 768 (q, k, v) + 768 + 3072 + 768, two
    # LayerNorms' weights and biases 4 x 768: read once at 8 MiB for the 64 tokens
    assert f.tokens == 64
    assert f.weights_bytes == 4 * 768 * 768 + 2 * 768 * 3072 + 3 * 768 + 768 + 3072 + 768 + 4 * 768
    # causal prefill computes all of S (no saving): K and V of 12 heads x 64 rows x 64 read once
    assert f.kv_cache_bytes == 2 * 12 * 64 * 64
    assert f.macs == 64 * (4 * 768 * 768 + 2 * 768 * 3072) + 12 * 2 * 64 * 64 * 64


def test_token_figures_bound_and_rates_by_hand():
    f = TokenFigures(tokens=4, weights_bytes=800, kv_cache_bytes=150, activation_bytes=50, macs=3000, cycles=2000,
                     compute_cycles=3000 / 384, memory_cycles=1000 / 32, clock_hz=1e9, model_layers=32)
    # 1000 bytes: 250 per token; 3 MACs per byte; 4 tokens in 2 us = 2e6 tokens/s; 32 layers: 64,000 cycles
    assert (f.traffic_bytes, f.arithmetic_intensity, f.bound) == (1000, 3.0, "memory")
    assert (f.tokens_per_second, f.whole_model_cycles) == (2e6, 64000)
    assert f.to_json()["bytes_per_token"] == {"weights": 200.0, "kv_cache": 37.5, "activations": 12.5,
                                             "total": 250.0}
    with pytest.raises(ValueError, match="tokens must be >= 1"):
        TokenFigures(0, 0, 0, 0, 0, 0, 0.0, 0.0, 1e9, 0)


# ------------------------------------------------------------------------------------------------ CLI
def test_cli_llama_decode_batch_8_reports_bytes_per_token(tmp_path, capsys):
    path = tmp_path / "decode.json"
    code = main(["network", "llama3-8b-layer:phase=decode,context=4096,batch=8", "--sram", "2MiB", "--quiet",
                 "--json", str(path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "memory-bound" in out and "a whole model is this layer x 32" in out
    per = json.loads(path.read_text())["per_token"]
    # the weights stream once per step and serve the 8 tokens; each sequence reads its own cache
    assert per["bytes_per_token"]["weights"] == LLAMA_DECODE_WEIGHTS / 8 == 27_264_064
    assert per["bytes_per_token"]["kv_cache"] == 2 * 4097 * 8 * 128 + 2 * 8 * 128
    assert per["tokens"] == 8 and per["bound"] == "memory"


@pytest.mark.parametrize("spec, says", [
    ("llama3-8b-layer:phase=decode,seq=5", "seq applies only with phase=prefill"),
    ("gpt2-layer:context=x,phase=decode", "context='x' must be a whole number"),
])
def test_cli_bad_preset_parameters_exit_2_with_one_line(spec, says, capsys):
    one_line_error(["network", spec], capsys, says)
