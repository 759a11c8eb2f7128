"""ZigZag workloads in, ZigZag workload and mapping out (issue 31; `dsasim.architect.problems.zigzag_workload`, `zigzag_mapping`).

The files under tests/data/zigzag/ are ZigZag's own examples (resnet18_excerpt.yaml, gemm_layer.yaml: copied
verbatim, their source in their header) or written in the form ZigZag's ONNX parser writes (mobilenetv2_dw.yaml);
every expected problem below is derived by hand from the file's numbers (the derivation in the comments).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli_helpers import one_line_error
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem
from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.studies.target import SearchOptions
from dsasim.architect.studies.target_kinds import target_of
from dsasim.cli import main
from dsasim.hardware import PRESETS
from dsasim.architect.problems.zigzag_workload import is_zigzag_spec, read_layer, read_workload, workload_yaml
from dsasim.architect.nests.zigzag_mapping import mapping_yaml, temporal_ordering

DATA = Path(__file__).parent / "data" / "zigzag"
RESNET18 = str(DATA / "resnet18_excerpt.yaml")
GEMM = str(DATA / "gemm_layer.yaml")
DEPTHWISE = str(DATA / "mobilenetv2_dw.yaml")
SMALL_GEMM = str(DATA / "small_gemm.yaml")


def _write(tmp_path: Path, text: str, name: str = "w.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


CONV = """- id: 7
  operator_type: Conv
  equation: O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]
  dimension_relations: [{rel}]
  loop_dims: [B, K, C, OY, OX, FY, FX]
  loop_sizes: [{sizes}]
  operand_precision: {{W: 8, I: 8, O: 8, O_final: 8}}
{extra}"""


def _conv(tmp_path: Path, rel: str = "ix=1*ox+1*fx, iy=1*oy+1*fy", sizes: str = "1, 8, 4, 6, 6, 3, 3",
          extra: str = "") -> str:
    return _write(tmp_path, CONV.format(rel=rel, sizes=sizes, extra=extra))


# -- in: ZigZag's own examples ---------------------------------------------------------------------------------------
def test_resnet18_convs_read_as_their_problems():
    # no padding in ZigZag's file, so each input is the span the outputs reach: stride*(O-1) + (F-1) + 1
    conv1 = read_layer(RESNET18, "0")  # 7x7 stride 2, 112 outputs: 2*111 + 7 = 229 rows and columns, 3 -> 64
    assert conv1.problem == ConvProblem(n=1, ic=3, oc=64, h=229, w=229, kh=7, stride=2)
    assert conv1.name == "example_name_of_layer0" and conv1.operator_type == "Conv"
    assert dict(conv1.operand_bits) == {"W": 8, "I": 8} and (conv1.output_bits, conv1.partial_bits) == (8, 16)
    # conv2_1: 3x3 stride 1, 56 outputs: 55 + 3 = 58; 64 -> 64; it has no name: ZigZag's default Layer2
    conv2 = read_layer(RESNET18, "2")
    assert conv2.problem == ConvProblem(n=1, ic=64, oc=64, h=58, w=58, kh=3) and conv2.name == "Layer2"
    # conv3_1: 3x3 stride 2, 28 outputs: 2*27 + 3 = 57; 64 -> 128
    assert read_layer(RESNET18, "8").problem == ConvProblem(n=1, ic=64, oc=128, h=57, w=57, kh=3, stride=2)
    # the fc layer: a 1x1 conv of a 1x1 image, 512 -> 1000
    assert read_layer(RESNET18, "30").problem == ConvProblem(n=1, ic=512, oc=1000, h=1, w=1, kh=1)
    # by name too
    assert read_layer(RESNET18, "example_name_of_layer0").problem == conv1.problem


@pytest.mark.parametrize("layer, op", [("1", "Pooling"), ("4", "Add")])
def test_pooling_and_add_are_refused_by_name(layer, op):
    with pytest.raises(ValueError, match=rf"resnet18_excerpt.yaml, layer {layer} \(entry \d\): operator_type "
                                         rf"'{op}': dsasim searches multiply-accumulate layers"):
        read_layer(RESNET18, layer)


def test_gemm_layer_reads_its_roles_not_its_letters(tmp_path):
    # ZigZag's gemm_layer.yaml names its dimensions D0, D1, D2: D0 indexes O and I (m), D1 O and W (n), D2 I and W (k)
    layer = read_layer(GEMM)
    assert layer.problem == MatmulProblem(128, 128, 128) and layer.partial_bits == 32
    # the same file with three different sizes tells the roles apart: D0=64 (m), D1=48 (n), D2=32 (k)
    text = Path(GEMM).read_text().replace("[128, 128, 128]", "[64, 48, 32]")
    assert read_layer(_write(tmp_path, text)).problem == MatmulProblem(64, 48, 32)
    # the weight is the input named W wherever it stands in the product
    swapped = text.replace("I[d0][d2]*W[d2][d1]", "W[d2][d1]*I[d0][d2]")
    assert read_layer(_write(tmp_path, swapped, "s.yaml")).problem == MatmulProblem(64, 48, 32)


def test_depthwise_in_the_onnx_parser_form():
    # G = 32 groups of K = C = 1 channel: 32 -> 32 channels in 32 groups; pr_loop_sizes 112, pads (1, 1): 3x3 stride 1
    # gives (112 + 2 - 3) // 1 + 1 = 112 outputs = OY, OX
    layer = read_layer(DEPTHWISE, "features.1.conv.0.0")
    assert layer.problem == ConvProblem(n=1, ic=32, oc=32, h=112, w=112, kh=3, padding=1, groups=32)
    assert layer.problem == parse_layer("mobilenetv2.dw1")


def test_rows_are_the_first_output_position_of_O(tmp_path):
    # relations listed columns first (as ZigZag's ONNX parser writes them); O[..][oy][ox] makes OY the rows:
    # OY = 4 outputs of a 3-tap kernel at stride 2: 2*3 + 3 = 9 rows; OX = 6 at stride 1: 5 + 3 = 8 columns
    path = _conv(tmp_path, rel="ix=1*ox+1*fx, iy=2*oy+1*fy", sizes="1, 8, 4, 4, 6, 3, 3")
    assert read_layer(path).problem == ConvProblem(n=1, ic=4, oc=8, h=9, w=8, kh=3, stride=(2, 1))


def test_dilation_is_the_taps_coefficient(tmp_path):
    # iy = 1*oy + 2*fy: 6 outputs, 3 taps 2 apart: 5 + 2*2 + 1 = 10 rows
    path = _conv(tmp_path, rel="ix=1*ox+1*fx, iy=1*oy+2*fy")
    assert read_layer(path).problem == ConvProblem(n=1, ic=4, oc=8, h=10, w=8, kh=3, dilation=(2, 1))


def test_padding_without_input_sizes(tmp_path):
    # padding (1, 1) and no pr_loop_sizes: 6 outputs of 3 taps reach 8 rows, of which 2 are padding: 6 real rows
    path = _conv(tmp_path, extra="  pr_loop_dims: [IY, IX]\n  padding: [[1, 1], [1, 1]]\n")
    assert read_layer(path).problem == ConvProblem(n=1, ic=4, oc=8, h=6, w=6, kh=3, padding=1)


def test_unequal_padding_modelled_only_where_it_is_the_same_layer(tmp_path):
    # 8 rows, 3 taps, stride 2 (OY = 4):
    # (begin 1, end 0): (8 + 1 + 0 - 3) // 2 + 1 = 4 outputs; padded (1, 1) as dsasim does: (8 + 2 - 3) // 2 + 1 = 4,
    # the last window ends at row 2*3 + 2 - 1 = 7, inside the input: the same layer, read as padding 1
    rel, sizes = "ix=2*ox+1*fx, iy=2*oy+1*fy", "1, 8, 4, 4, 4, 3, 3"
    path = _conv(tmp_path, rel=rel, sizes=sizes,
                 extra="  pr_loop_dims: [IY, IX]\n  pr_loop_sizes: [8, 8]\n  padding: [[1, 0], [1, 0]]\n")
    assert read_layer(path).problem == ConvProblem(n=1, ic=4, oc=8, h=8, w=8, kh=3, stride=2, padding=1)
    # (begin 0, end 1): (8 + 0 + 1 - 3) // 2 + 1 = 4 outputs, but padded (0, 0): (8 - 3) // 2 + 1 = 3: refused
    path = _conv(tmp_path, rel=rel, sizes=sizes,
                 extra="  pr_loop_dims: [IY, IX]\n  pr_loop_sizes: [8, 8]\n  padding: [[0, 1], [0, 1]]\n")
    with pytest.raises(ValueError, match=r"layer 7 \(entry 1\): IY: an input of 8 with padding \(0, 1\).*pads "
                                         r"both sides.*gives 3 outputs, but OY is 4"):
        read_layer(path)


def test_a_1d_conv_is_one_column_wide(tmp_path):
    text = ("- id: 0\n  operator_type: Conv\n  equation: O[k][ox]+=W[k][c][fx]*I[c][ix]\n"
            "  dimension_relations: [ix=1*ox+1*fx]\n  loop_dims: [K, C, OX, FX]\n  loop_sizes: [8, 4, 10, 3]\n"
            "  operand_precision: {W: 8, I: 8, O: 8, O_final: 8}\n")
    # 10 outputs of 3 taps: 12 input positions, as rows of a one-column image
    assert read_layer(_write(tmp_path, text)).problem == ConvProblem(n=1, ic=4, oc=8, h=12, w=1, kh=3, kw=1)


def test_read_workload_reads_every_layer_or_refuses(tmp_path):
    assert [layer.problem for layer in read_workload(DEPTHWISE)] == [parse_layer("mobilenetv2.dw1")]
    with pytest.raises(ValueError, match="layer 1 .*Pooling"):
        read_workload(RESNET18)


# -- the registry and the command line -------------------------------------------------------------------------------
def test_specs_the_kind_takes():
    assert is_zigzag_spec("zigzag:x.txt") and is_zigzag_spec("a/b.yaml#3") and is_zigzag_spec("B.YML")
    assert not is_zigzag_spec("conv:ic=64,oc=64,h=56") and not is_zigzag_spec("resnet50.conv1")


def test_registry_loads_a_layer_by_the_hardware():
    target = target_of(f"zigzag:{RESNET18}#30", PRESETS["blog"])
    assert target.kind == "layer" and target.problem == ConvProblem(n=1, ic=512, oc=1000, h=1, w=1, kh=1)
    assert target_of(f"{DEPTHWISE}", PRESETS["blog-l1"]).kind == "levels"


def test_the_partial_sum_precision_is_said(monkeypatch):
    from dsasim.architect.studies.layer_target import LayerTarget

    monkeypatch.setattr(LayerTarget, "search", lambda self, sram, objective, options: "searched")
    said: list[str] = []
    target = target_of(f"{RESNET18}#30", PRESETS["blog"])  # O: 16 bits, the word 8
    assert target.search(1 << 20, "traffic", SearchOptions(warn=said.append)) == "searched"
    assert len(said) == 1 and "partial sums (operand_precision O) in 16 bits" in said[0] and "8-bit words" in said[0]
    said.clear()
    target_of(SMALL_GEMM, PRESETS["blog"]).search(1 << 20, "traffic", SearchOptions(warn=said.append))
    assert said == []  # O: 8 bits, the word


def _search_json(tmp_path: Path, layer: str, name: str, *extra: str) -> dict:
    out = tmp_path / name
    assert main(["search", layer, "--sram", "4KiB", "--confirm", "1", "--no-simulate", "--json", str(out),
                 *extra]) == 0
    return json.loads(out.read_text())


def test_a_zigzag_layer_searches_as_the_same_layer_on_the_command_line(tmp_path, capsys):
    from_file = _search_json(tmp_path, SMALL_GEMM, "z.json")
    given = _search_json(tmp_path, "gemm:m=64,n=48,k=32", "g.json")
    assert from_file.pop("layer") == SMALL_GEMM and given.pop("layer") == "gemm:m=64,n=48,k=32"
    assert from_file["loop_nest"]["problem"].pop("name") == "Layer0"
    given["loop_nest"]["problem"].pop("name")
    assert from_file == given


def test_zigzag_out_writes_workload_and_mapping_once(tmp_path, capsys):
    folder = tmp_path / "zz"
    result = _search_json(tmp_path, "gemm:m=64,n=48,k=32", "g.json", "--zigzag", str(folder))
    nest = LoopNest.from_json(result)
    # the workload read back is the searched problem
    assert read_layer(str(folder / "workload.yaml")).problem == MatmulProblem(64, 48, 32)
    # the mapping: a default entry and the layer's, its tile loops the nest's (trips = ceil(extent / tile)),
    # innermost first, after the steps inside a tile
    entries = yaml.safe_load((folder / "mapping.yaml").read_text())
    assert [e["name"] for e in entries] == ["default", "gemm:m=64,n=48,k=32"]
    letters = {"m": "D", "k": "C", "n": "K"}
    ext = {"m": 64, "n": 48, "k": 32}
    trips = [[letters[d], -(-ext[d] // result["loop_nest"]["tiles"][d])] for d in reversed(result["loop_nest"]["order"])]
    tile_loops = [loop for loop in trips if loop[1] > 1]
    ordering = entries[1]["temporal_ordering"]
    assert ordering[len(ordering) - len(tile_loops):] == tile_loops
    assert entries[1]["memory_operand_links"] == {"O": "O", "W": "I2", "I": "I1"}
    assert nest.problem == MatmulProblem(64, 48, 32)
    capsys.readouterr()
    # never overwritten: a second export into the same folder is refused before the search, the files unchanged
    before = (folder / "mapping.yaml").read_text()
    one_line_error(["search", "gemm:m=64,n=48,k=32", "--zigzag", str(folder)], capsys,
                   "workload.yaml and mapping.yaml already exist there")
    assert (folder / "mapping.yaml").read_text() == before


@pytest.mark.parametrize("layer, hardware, expect", [
    ("resnet18.layer1.0", "blog", "is a chain target, which it does not write"),
    ("gemm:m=64,n=48,k=32", "blog-l1", "is hardware with levels below the SRAM"),
])
def test_zigzag_out_refuses_what_is_not_one_loop_nest(tmp_path, capsys, layer, hardware, expect):
    one_line_error(["search", layer, "--hardware", hardware, "--zigzag", str(tmp_path / "o")], capsys, expect)
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_zigzag_out_refuses_to_overwrite_its_input(tmp_path, capsys):
    source = tmp_path / "workload.yaml"
    source.write_text(Path(SMALL_GEMM).read_text())
    one_line_error(["search", str(source), "--zigzag", str(tmp_path)], capsys, "already exist")


def test_network_of_a_zigzag_file_is_refused_with_the_way(capsys):
    one_line_error(["network", RESNET18], capsys, "is a ZigZag workload: dsasim reads its conv and matmul layers one "
                                                  "at a time, `dsasim search zigzag:FILE#ID`")


# -- out: the workload and the mapping --------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["resnet50.conv1", "mobilenetv2.dw1", "resnext50.conv2_g32", "gemm:m=100,n=200,k=300",
                                  "conv:ic=8,oc=16,h=20,w=17,kh=3,kw=5,sh=2,sw=1,ph=1,pw=2,dh=2,dw=1,n=2"])
def test_written_workload_reads_back_as_the_same_problem(tmp_path, spec):
    problem = parse_layer(spec)
    assert read_layer(_write(tmp_path, workload_yaml(problem, 8))).problem == problem


def test_mapping_of_a_hand_built_nest():
    # conv 64 -> 64, 3x3, 58 x 58 input (56 x 56 outputs); the nest: oc in tiles of 22 (3 trips, the last 20), oh in
    # tiles of 2 (28 trips), everything else whole. Spatial: K min(24, 22) = 22, C min(16, 64) = 16.
    # Inside a tile, innermost first (the problem's dims reversed): FX 3, FY 3, C 64/16 = 4, OX 56, OY 2 (K 22/22 = 1
    # and B 1 left out); then the tile loops innermost first: OY 28, K 3 (ragged).
    p = ConvProblem(n=1, ic=64, oc=64, h=58, w=58, kh=3)
    nest = LoopNest(p, ["oc", "oh", "n", "ow", "ic", "kh", "kw"], {"oc": 22, "oh": 2},
                    {"image": "top", "weight": "oc", "output": "oh"}, {"weight": 2, "output": 2})
    assert temporal_ordering(nest, PRESETS["blog"]) == [
        ("kw", 3, "tile"), ("kh", 3, "tile"), ("ic", 4, "tile"), ("ow", 56, "tile"), ("oh", 2, "tile"),
        ("oh", 28, "dram"), ("oc", 3, "dram")]
    text = mapping_yaml(nest, PRESETS["blog"], 1 << 20)
    layer = yaml.safe_load(text)[1]
    assert layer["spatial_mapping"] == {"D1": ["K, 22"], "D2": ["C, 16"]}
    assert layer["temporal_ordering"] == [["FX", 3], ["FY", 3], ["C", 4], ["OX", 56], ["OY", 2], ["OY", 28], ["K", 3]]
    assert "K: 64 in tiles of 22: the last of 3 holds 20" in text and "- [K, 3]  # ragged" in text
    assert "W (weight): staged in the SRAM inside the K tile loop, 2-way" in text
    assert "O (output): staged in the SRAM inside the OY tile loop, 2-way; the tile loops K, OY" in text


def test_mapping_of_a_depthwise_nest_has_no_spatial_channels():
    # one channel per group: K and C each 1 (min(24, 1), min(16, 1)): no spatial unrolling is written
    p = parse_layer("mobilenetv2.dw1")
    nest = LoopNest(p, list(p.dims), {}, {t: "top" for t in p.tensor_names})
    layer = yaml.safe_load(mapping_yaml(nest, PRESETS["blog"], 1 << 22))[1]
    assert layer["spatial_mapping"] == {}
    # one tile of everything: G 32, OX 112, OY 112, FX 3, FY 3 inside it, innermost first; no tile loops
    assert layer["temporal_ordering"] == [["FX", 3], ["FY", 3], ["OX", 112], ["OY", 112], ["G", 32]]


# -- bad input: one line naming the file, the layer and what is wrong, exit 2 ----------------------------------------
BAD = [
    ("- id: 0\n  equation: [unclosed\n", "not valid YAML (line"),
    ("id: 0\noperator_type: Conv\n", "a ZigZag workload is a YAML list of layers"),
    ("problem:\n  shape: {name: CNN-Layer}\n", "found a dict (a Timeloop problem, its top-level key 'problem', is not "
                                               "one)"),
    ("", "found an empty file"),
    ("- 3\n", "entry 1: a layer is a mapping"),
    (CONV.format(rel="ix=1*ox+1*fx, iy=1*oy+1*fy", sizes="1, 8, 4, 6, 6, 3, 3",
                 extra="").replace("*I[b][c][iy][ix]", "*I[b][c][iy][ix]*X[k]"),
     "layer 7 (entry 1): equation 'O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]*X[k]' is not of the form"),
    (CONV.format(rel="", sizes="1, 8, 4, 6, 6, 3, 3", extra="").replace(
        "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]", "O[b][k]=W[b][k]+I[b][k]"),
     "is an element-wise sum, not a multiply-accumulate"),
    (CONV.format(rel="ix=2*ox+1*oy, iy=1*oy+1*fy", sizes="1, 8, 4, 6, 6, 3, 3", extra=""),
     "dimension relation 'ix=2*ox+1*oy': dsasim models an input row or column as stride x an output position"),
    (CONV.format(rel="ix=1*ox+1*fx, iy=1*oy+1*fy", sizes="1, 8, 4, 6, 6, 3", extra="").replace(
        "[B, K, C, OY, OX, FY, FX]", "[B, K, C, OY, OX, FY]"),
     "dimension relation 'ix=1*ox+1*fx': FX has no loop size; add it to loop_dims and loop_sizes"),
    (CONV.format(rel="ix=1*ox+1*fx, iy=1*oy+1*fy", sizes="1, 8, 4, 6, 6, 3", extra=""),
     "loop_sizes must be a list of 7 sizes"),
    (CONV.format(rel="ix=1*ox+1*fx, iy=1*oy+1*fy", sizes="1, 8, 4, 6, 6, 3, 3", extra="  core_allocation: 1\n"),
     "unknown key(s) ['core_allocation']"),
    (CONV.format(rel="ix=1*ox+1*fx, iy=1*oy+1*fy", sizes="1, 8, 4, 6, 6, 3, 3", extra="").replace(
        "O: 8, O_final: 8", "O: 8"), "operand_precision needs exactly ['W', 'I', 'O', 'O_final']"),
    ("- id: 0\n  operator_type: MatMul\n  equation: O[h][d][k]+=I[h][d][c]*W[h][c][k]\n  loop_dims: [H, D, C, K]\n"
     "  loop_sizes: [12, 8, 8, 8]\n  operand_precision: {W: 8, I: 8, O: 8, O_final: 8}\n",
     "dimension(s) ['H'] index the output and both inputs: a batched matmul"),
    ("- id: 0\n  operator_type: Gemm\n  equation: O[d][k]+=I[d][c]*W[c][k]\n  loop_dims: [D, C, K, Z]\n"
     "  loop_sizes: [8, 8, 8, 4]\n  operand_precision: {W: 8, I: 8, O: 8, O_final: 8}\n",
     "loop dimension Z (size 4) appears nowhere in the equation"),
    ("- id: 0\n  operator_type: Gemm\n  equation: O[d][k]+=I[d][c]*W[c][k]\n  loop_dims: [D, C]\n"
     "  loop_sizes: [8, 8]\n  operand_precision: {W: 8, I: 8, O: 8, O_final: 8}\n",
     "dimension K of the equation has no loop size"),
]


@pytest.mark.parametrize("text, expect", BAD)
def test_bad_workload_is_one_line_naming_the_file(tmp_path, capsys, text, expect):
    path = _write(tmp_path, text)
    line = one_line_error(["search", path], capsys, expect)
    assert f"ZigZag workload {path}" in line


@pytest.mark.parametrize("argv, expect", [
    (["search", RESNET18], "holds 6 layers; name one by id or name, e.g. zigzag:"),
    (["search", f"{RESNET18}#99"], "no layer with id or name '99'; its ids are 0, 1, 2, 4, 8, 30"),
    (["search", "zigzag:missing.yaml"], "ZigZag workload missing.yaml does not exist"),
    (["search", f"{RESNET18}#"], "nothing after '#'"),
    (["search", f"{SMALL_GEMM}", "--hardware", "blog-fp32"],
     "layer 0 (entry 1): operand_precision I is 8 bits, but blog-fp32 counts every tensor in 32-bit words"),
])
def test_bad_spec_is_one_line(capsys, argv, expect):
    one_line_error(argv, capsys, expect)
