"""Issue 29: `sweep-sram --network PRESET --vary-network PARAMETER=V1,V2,...`: one sweep per value of a preset's
declared parameter, with per-token figures per size. Expected figures derived by hand in comments."""

from __future__ import annotations

import json

import pytest

from dsasim.architect.studies.network_vary import vary_network_specs
from dsasim.cli import main
from tests.cli_helpers import one_line_error

LLAMA = "llama3-8b-layer:phase=decode,context=4096"


def test_specs_keep_the_other_parameters_and_set_the_varied_one():
    assert vary_network_specs(LLAMA, "batch=1,8,32") == [f"{LLAMA},batch={b}" for b in (1, 8, 32)]
    # a value already in the spec is replaced, not given twice
    assert vary_network_specs(LLAMA + ",batch=4", "batch=2") == [f"{LLAMA},batch=2"]
    assert vary_network_specs(LLAMA, "context=128,512") == ["llama3-8b-layer:phase=decode,context=128",
                                                             "llama3-8b-layer:phase=decode,context=512"]
    assert vary_network_specs("bert-base-layer", "seq=128,512") == ["bert-base-layer:seq=128", "bert-base-layer:seq=512"]


@pytest.mark.parametrize("spec, vary, says", [
    ("resnet18", "batch=1,2", "a preset with parameters"),
    ("tests/data/small_transformer.py:SmallTransformer", "batch=1", "a preset with parameters"),
    (LLAMA, "heads=1,2", "parameter llama3-8b-layer declares"),
    (LLAMA, "batch", "PARAMETER=V1,V2"),
    (LLAMA, "batch=1,,8", "an empty value"),
    (LLAMA, "batch=8,8", "a value given twice"),
])
def test_bad_variations_say_what_is_wrong(spec, vary, says):
    with pytest.raises(ValueError, match=says):
        vary_network_specs(spec, vary)


@pytest.mark.parametrize("argv, says", [
    (["sweep-sram", "gemm-1024", "--sizes", "1MiB", "--vary-network", "batch=1"], "--vary-network does not apply"),
    (["sweep-sram", "--network", "resnet18", "--sizes", "1MiB", "--vary-network", "batch=1"], "preset with param"),
    (["sweep-sram", "--network", LLAMA, "--sizes", "1MiB", "--vary-network", "batch=0,8"], "batch"),
    (["sweep-sram", "--network", LLAMA, "--sizes", "1MiB", "--vary-network", "batch=1", "--plot", "x.png"],
     "--plot does not apply with --vary-network"),
])
def test_cli_bad_variations_exit_2_with_one_line(argv, says, capsys):
    one_line_error(argv, capsys, says)


def test_decode_bytes_per_token_by_batch(tmp_path, capsys):
    path = tmp_path / "vary.json"
    assert main(["sweep-sram", "--network", LLAMA, "--vary-network", "batch=1,8", "--sizes", "2MiB", "--quiet",
                 "--json", str(path)]) == 0
    text = capsys.readouterr().out
    data = json.loads(path.read_text())
    assert data["vary_network"] == "batch=1,8"
    names = [s["network"] for s in data["sweeps"]]
    assert names == [f"{LLAMA},batch=1", f"{LLAMA},batch=8"]
    one, eight = (s["points"][0]["per_token"]["bytes_per_token"] for s in data["sweeps"])
    # the layer's weights (1-byte words: 218,112,512 B, tests/test_llm_layers.py) stream once per decode step,
    # shared by the batch: per token 218,112,512 / 8 = 27,264,064 B at batch 8
    assert one["weights"] == 218_112_512 and eight["weights"] == 218_112_512 / 8
    # each sequence reads its own cache: K and V of 4097 rows x 8 heads x 128 and writes the new rows, per token
    # the same at any batch
    assert one["kv_cache"] == eight["kv_cache"] == 2 * 4097 * 8 * 128 + 2 * 8 * 128
    assert "per token" in text and "tokens/s" in text and f"{LLAMA},batch=8:" in text


def test_the_decode_batch_figures_command():
    """plots/llm_decode_batch.py's numbers: its COMMAND's JSON, checked here."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "plots" / "llm_decode_batch.py"
    spec = importlib.util.spec_from_file_location("llm_decode_batch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module.decode_batch_figures()
    assert [s["network"].rsplit("=", 1)[1] for s in data["sweeps"]] == ["1", "8", "32"]
    for sweep, batch in zip(data["sweeps"], (1, 8, 32)):
        for point in sweep["points"]:
            per = point["per_token"]
            # weights 218,112,512 B per step shared by the batch; the KV cache per sequence (as above)
            assert per["bytes_per_token"]["weights"] == 218_112_512 / batch
            assert per["bytes_per_token"]["kv_cache"] == 2 * 4097 * 8 * 128 + 2 * 8 * 128
    # batch 1 moves ~1 byte per MAC (memory-bound); at batch 32 the weights' share is 1/32 and the MACs per byte
    # rise past the blog's 384 MACs / 32 B = 12 per byte of the compute/memory balance
    assert data["sweeps"][0]["points"][0]["per_token"]["bound"] == "memory"
    assert data["sweeps"][2]["points"][0]["per_token"]["bound"] == "compute"


# -------------------------------------------------------------------------------- decode over the context length
DECODE_BATCH8 = "llama3-8b-layer:phase=decode,batch=8"


def test_a_context_past_the_models_positions_is_refused_before_any_network_is_traced():
    # Llama 3 8B's config.json: max_position_embeddings 8192, so at most 8191 cached rows beside the new token;
    # the last value is checked with the first, not after two networks were traced and swept
    with pytest.raises(ValueError, match="context='16384' must be a whole number from 1 to 8191 .*8,192 positions"):
        vary_network_specs(DECODE_BATCH8, "context=1024,4096,16384")


def test_decode_kv_cache_bytes_per_token_by_context(tmp_path, capsys):
    path = tmp_path / "context.json"
    assert main(["sweep-sram", "--network", DECODE_BATCH8, "--vary-network", "context=1024,4096", "--sizes", "2MiB",
                 "--quiet", "--json", str(path)]) == 0
    capsys.readouterr()
    data = json.loads(path.read_text())
    assert [s["network"] for s in data["sweeps"]] == [f"llama3-8b-layer:phase=decode,context={c},batch=8"
                                                      for c in (1024, 4096)]
    short, long = (s["points"][0]["per_token"]["bytes_per_token"] for s in data["sweeps"])
    # per token, per layer, 1-byte elements: the token's sequence reads K and V of its cache and its own new row,
    # L + 1 rows x hkv 8 heads x d 128 each (2 x (L + 1) x 8 x 128), and writes the new row of each (2 x 8 x 128):
    # 2 x 1025 x 1024 + 2,048 = 2,101,248 B at L = 1024; 2 x 4097 x 1024 + 2,048 = 8,392,704 B at L = 4096
    assert short["kv_cache"] == 2 * 1025 * 8 * 128 + 2 * 8 * 128 == 2_101_248
    assert long["kv_cache"] == 2 * 4097 * 8 * 128 + 2 * 8 * 128 == 8_392_704
    # the weights do not depend on the context: 218,112,512 B per step shared by the batch of 8
    assert short["weights"] == long["weights"] == 218_112_512 / 8
