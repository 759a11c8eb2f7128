"""Shape-only network definitions: parameter counts and layer tables against the papers and torchvision's
published figures (every expected value is derived by hand or quoted, never pasted from a run)."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx
from torch import nn
from torch.fx.passes.shape_prop import ShapeProp

from dsasim.architect.studies.network_models import PRESETS, bert_layer, mobilenet_v2, resnet18, resnet50


def _parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _convs(model: nn.Module) -> list[nn.Conv2d]:
    return [m for m in model.modules() if isinstance(m, nn.Conv2d)]


def _conv_row(conv: nn.Conv2d) -> tuple[int, int, int, int, int]:
    """(in, out, kernel, stride, padding) of a square conv."""
    (kh, kw), (sh, sw), (ph, pw) = conv.kernel_size, conv.stride, conv.padding
    assert kh == kw and sh == sw and ph == pw
    return conv.in_channels, conv.out_channels, kh, sh, ph


def _meta_input(*shape: int) -> torch.Tensor:
    return torch.empty(shape, device="meta")


# ---------------------------------------------------------------------------------------------------------------
# parameter counts: torchvision's model cards (ResNet-18, ResNet-50, MobileNetV2) and a hand derivation (BERT)
# ---------------------------------------------------------------------------------------------------------------


def test_resnet18_parameter_count():
    assert _parameter_count(resnet18()) == 11_689_512


@pytest.mark.parametrize("stride_on", ["3x3", "1x1"])
def test_resnet50_parameter_count_is_independent_of_the_stride_place(stride_on):
    assert _parameter_count(resnet50(stride_on=stride_on)) == 25_557_032


def test_mobilenet_v2_parameter_count():
    assert _parameter_count(mobilenet_v2()) == 3_504_872


def test_bert_base_layer_parameter_count():
    hidden, intermediate = 768, 3072
    attention = 4 * (hidden * hidden + hidden)  # query, key, value, output: weight + bias each = 2,362,368
    ffn = hidden * intermediate + intermediate + intermediate * hidden + hidden  # = 4,722,432
    layer_norms = 2 * 2 * hidden  # two LayerNorms, weight + bias each = 3,072
    assert attention + ffn + layer_norms == 7_087_872
    assert _parameter_count(bert_layer()) == 7_087_872


# ---------------------------------------------------------------------------------------------------------------
# built on meta, in eval mode, with the right output shapes
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_are_meta_and_eval(name):
    model = PRESETS[name].build()
    tensors = list(model.parameters()) + list(model.buffers())
    assert tensors and all(t.device.type == "meta" for t in tensors)
    assert not any(m.training for m in model.modules())


def test_preset_names_and_inputs():
    image = (1, 3, 224, 224)
    assert {name: p.input_shape for name, p in PRESETS.items()} == {
        "resnet18": image,
        "resnet50": image,
        "resnet50-caffe": image,
        "mobilenetv2": image,
        "bert-base-layer": (1, 128, 768),
        "llama3-8b-layer": (1, 2048, 4096),  # prefill of 2048 tokens by default
        "gpt2-layer": (1, 1024, 768),
    }
    for name, preset in PRESETS.items():
        assert preset.name == name
        assert preset.description and "\n" not in preset.description


@pytest.mark.parametrize("build", [resnet18, resnet50, lambda: resnet50(stride_on="1x1"), mobilenet_v2],
                         ids=["resnet18", "resnet50", "resnet50-1x1", "mobilenetv2"])
def test_image_networks_give_1000_class_scores(build):
    assert build()(_meta_input(1, 3, 224, 224)).shape == (1, 1000)


def test_bert_layer_keeps_the_input_shape():
    assert bert_layer(seq_len=64)(_meta_input(2, 64, 768)).shape == (2, 64, 768)


# ---------------------------------------------------------------------------------------------------------------
# fx tracing and shape propagation
# ---------------------------------------------------------------------------------------------------------------


def _traced_with_shapes(name: str) -> torch.fx.GraphModule:
    preset = PRESETS[name]
    graph_module = torch.fx.symbolic_trace(preset.build())
    ShapeProp(graph_module).propagate(_meta_input(*preset.input_shape))
    return graph_module


def _output_shape(graph_module: torch.fx.GraphModule) -> tuple[int, ...]:
    (output,) = [n for n in graph_module.graph.nodes if n.op == "output"]
    return tuple(output.args[0].meta["tensor_meta"].shape)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_trace_and_propagate_shapes(name):
    graph_module = _traced_with_shapes(name)
    # a layer (BERT, a decoder layer) maps its input shape to itself; an image network gives 1000 class scores
    expected = PRESETS[name].input_shape if PRESETS[name].model_layers else (1, 1000)
    assert _output_shape(graph_module) == expected


def _adds(graph_module: torch.fx.GraphModule) -> int:
    return sum(1 for n in graph_module.graph.nodes if n.op == "call_function" and n.target is operator.add)


@pytest.mark.parametrize("name, residual_adds", [
    ("resnet18", 2 + 2 + 2 + 2),  # one per basic block
    ("resnet50", 3 + 4 + 6 + 3),  # one per bottleneck
    # stride-1 blocks with in == out: 24 x1, 32 x2, 64 x3, 96 x2, 160 x2 (each stage's first block changes shape)
    ("mobilenetv2", 1 + 2 + 3 + 2 + 2),
    ("bert-base-layer", 2),  # after attention and after the FFN
])
def test_residual_adds_in_the_traced_graph(name, residual_adds):
    assert _adds(torch.fx.symbolic_trace(PRESETS[name].build())) == residual_adds


def test_bert_attention_shapes():
    # BERT-base at sequence 128: 12 heads of 768 / 12 = 64; scores are (batch, heads, seq, seq)
    graph_module = _traced_with_shapes("bert-base-layer")
    matmuls = [n for n in graph_module.graph.nodes if n.op == "call_function" and n.target is torch.matmul]
    assert [tuple(n.meta["tensor_meta"].shape) for n in matmuls] == [(1, 12, 128, 128), (1, 12, 128, 64)]
    softmaxes = [n for n in graph_module.graph.nodes if n.target is torch.softmax]
    assert len(softmaxes) == 1 and tuple(softmaxes[0].meta["tensor_meta"].shape) == (1, 12, 128, 128)


# ---------------------------------------------------------------------------------------------------------------
# ResNet-50's conv table (He et al., 2016, Table 1) and where the stride sits
# ---------------------------------------------------------------------------------------------------------------


def _paper_resnet50_convs(stride_on: str) -> list[tuple[int, int, int, int, int]]:
    """ResNet-50's 53 convs in torchvision module order; stride_on says which conv of a stride-2 block strides."""
    rows = [(3, 64, 7, 2, 3)]  # conv1: 7x7/2, 64
    in_channels = 64  # after the 3x3/2 max pool
    for blocks, width, stage_stride in [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)]:
        out_channels = 4 * width  # bottleneck expansion
        for block in range(blocks):
            first = block == 0
            block_in = in_channels if first else out_channels
            stride = stage_stride if first else 1
            rows += [
                (block_in, width, 1, stride if stride_on == "1x1" else 1, 0),  # conv1: 1x1 reduce
                (width, width, 3, stride if stride_on == "3x3" else 1, 1),  # conv2: 3x3
                (width, out_channels, 1, 1, 0),  # conv3: 1x1 expand
            ]
            if first:  # every stage's first block changes the channel count, so it has a projection shortcut
                rows.append((block_in, out_channels, 1, stride, 0))  # downsample.0: strides in both layouts
        in_channels = out_channels
    return rows


def test_resnet50_has_53_convs_all_without_bias():
    convs = _convs(resnet50())
    assert len(convs) == 53
    assert all(c.bias is None for c in convs)


def test_resnet50_caffe_layout_matches_the_paper_table():
    expected = _paper_resnet50_convs("1x1")
    assert len(expected) == 53
    assert [_conv_row(c) for c in _convs(resnet50(stride_on="1x1"))] == expected


def test_resnet50_v1_5_moves_the_stride_to_the_3x3_conv():
    model = resnet50(stride_on="3x3")
    for stage in (model.layer2, model.layer3, model.layer4):
        first = stage[0]
        assert first.conv1.stride == (1, 1)
        assert first.conv2.stride == (2, 2)
        assert first.downsample[0].stride == (2, 2)
    expected = _paper_resnet50_convs("3x3")
    # the two layouts differ only in the conv1 and conv2 of the three stride-2 blocks
    assert sum(a != b for a, b in zip(expected, _paper_resnet50_convs("1x1"))) == 3 * 2
    assert [_conv_row(c) for c in _convs(model)] == expected


def test_resnet50_module_names_follow_torchvision():
    names = dict(resnet50().named_modules())
    for name in ("conv1", "bn1", "relu", "maxpool", "layer1.0.conv3", "layer1.0.bn3", "layer1.0.downsample.0",
                 "layer1.0.downsample.1", "layer4.2.conv3", "avgpool", "fc"):
        assert name in names
    assert isinstance(names["avgpool"], nn.AdaptiveAvgPool2d) and names["avgpool"].output_size == (1, 1)
    assert names["fc"].in_features == 2048 and names["fc"].out_features == 1000
    # only a stage's first block changes shape, so only it has a projection shortcut
    assert [n for n in names if n.endswith("downsample")] == [f"layer{i}.0.downsample" for i in range(1, 5)]


# ---------------------------------------------------------------------------------------------------------------
# MobileNetV2 (Sandler et al., 2018, Table 2)
# ---------------------------------------------------------------------------------------------------------------


def test_mobilenet_v2_convs_and_depthwise_layers():
    convs = _convs(mobilenet_v2())
    # stem 1 + first block (t=1, no expand) 2 + 16 blocks x 3 + final 1x1 = 52
    assert len(convs) == 1 + 2 + 16 * 3 + 1
    depthwise = [c for c in convs if c.groups == c.in_channels == c.out_channels > 1]
    # expanded widths t x input channels, block by block down Table 2: 32 (t=1), 6 x (16; 24 24; 32 32 32;
    # 64 64 64 64; 96 96 96; 160 160 160)
    assert [c.in_channels for c in depthwise] == [32, 96, 144, 144, 192, 192, 192, 384, 384, 384, 384,
                                                  576, 576, 576, 960, 960, 960]
    # stride 2 on the first repeat of the s=2 rows (24, 32, 64, 160)
    assert [c.stride[0] for c in depthwise] == [1, 2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1]
    assert all(c.kernel_size == (3, 3) and c.padding == (1, 1) for c in depthwise)


def test_mobilenet_v2_layout():
    model = mobilenet_v2()
    assert len(model.features) == 1 + 17 + 1
    assert isinstance(model.features[0][2], nn.ReLU6)
    assert model.features[-1][0].out_channels == 1280
    dropout, linear = model.classifier
    assert isinstance(dropout, nn.Dropout) and dropout.p == 0.2
    assert (linear.in_features, linear.out_features) == (1280, 1000)


# ---------------------------------------------------------------------------------------------------------------
# bad arguments
# ---------------------------------------------------------------------------------------------------------------


def test_bad_stride_place_is_rejected():
    with pytest.raises(ValueError, match="'3x3'.*'1x1'.*'2x2'"):
        resnet50(stride_on="2x2")


@pytest.mark.parametrize("kwargs, message", [
    (dict(hidden=100, heads=12), "divisible"),
    (dict(heads=0), "heads must be a positive int"),
    (dict(seq_len=-1), "seq_len must be a positive int"),
    (dict(intermediate=3072.0), "intermediate must be a positive int"),
])
def test_bad_bert_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bert_layer(**kwargs)
