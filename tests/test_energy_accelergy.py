"""Accelergy's ERT/ART summaries read (dsasim/energy/accelergy.py) and mapped onto a dsasim accelerator
(dsasim/energy/accelergy_map.py). The files under tests/data/accelergy/ are Accelergy-Project/
timeloop-accelergy-exercises' published reference outputs at commit 2d55108 (that folder's README names each
path); the expected numbers below are read off those files by eye, not from the reader."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from dsasim.energy.accelergy import AccelergyComponent, instances_of, read_accelergy, short_name
from dsasim.energy.accelergy_map import AccelergyBinding, accelergy_energies, accelergy_from_toml, with_accelergy
from dsasim.hardware import PRESETS

DATA = Path(__file__).parent / "data" / "accelergy"
CONV1D_ERT, CONV1D_ART = DATA / "conv1d_2level.ERT_summary.yaml", DATA / "conv1d_2level.ART_summary.yaml"
BLOG = PRESETS["blog"]
BLOG_L1 = PRESETS["blog-l1"]


def _conv1d_map(**changes) -> tuple[AccelergyBinding, ...]:
    bindings = {"DDR": AccelergyBinding("DDR", "MainMemory", 8), "SRAM": AccelergyBinding("SRAM", "Buffer", 1),
                "tensorcore": AccelergyBinding("tensorcore", "MACC")}
    bindings.update(changes)
    return tuple(b for b in bindings.values() if b is not None)


# -- reading ---------------------------------------------------------------------------------------------------------

def test_reads_the_conv1d_exercise_tables():
    """conv1d_2level.ERT_summary.yaml lists MainMemory read 43.353054, write = update 30.878292, leak 0.007972;
    Buffer 0.42564 for read/write/update, leak 0.000861; MACC compute 0.845. The ART: 707084.0, 887.84 and
    332.25 um^2, one instance each ([1..1])."""
    t = read_accelergy(CONV1D_ERT, CONV1D_ART)
    assert t.version == "0.4"
    assert [c.short_name for c in t.components] == ["MainMemory", "Buffer", "MACC"]
    mm = t.component("MainMemory")
    assert (mm.energy_pj("read"), mm.energy_pj("write"), mm.energy_pj("update")) == (43.353054, 30.878292, 30.878292)
    assert mm.leak_pj_per_cycle == 0.007972 and mm.instances == 1
    assert mm.area_mm2 == pytest.approx(0.707084, rel=1e-12)  # 707084 um^2 / 1e6
    assert t.component("Buffer").energy_pj("read") == 0.42564
    assert t.component("MACC").energy_pj("compute") == 0.845
    assert t.component("MACC").leak_pj_per_cycle is None  # no leak action: unknown, not zero
    # the three ways to name a component find the same one
    assert t.component("PE_top_level.MACC[1..1]") is t.component("PE_top_level.MACC") is t.component("MACC")


def test_instances_and_areas_of_an_instanced_design():
    """simba_like: PEWeightBuffer[1..64], 120.78787 pJ per write, leak 0.104535, 1858571.37 um^2 per instance ->
    64 x 1858571.37 / 1e6 = 118.94856768 mm^2; mac[1..256] 0.315 pJ per compute. The ART lists the network parts
    (inter_PE_spatial) the ERT leaves out: harmless."""
    t = read_accelergy(DATA / "simba_like.ERT_summary.yaml", DATA / "simba_like.ART_summary.yaml")
    wb = t.component("PEWeightBuffer")
    assert (wb.instances, wb.energy_pj("write"), wb.leak_pj_per_cycle) == (64, 120.78787, 0.104535)
    assert wb.area_mm2 == pytest.approx(118.94856768, rel=1e-12)
    assert (t.component("mac").instances, t.component("mac").energy_pj("compute")) == (256, 0.315)


def test_version_03_takes_the_average_energy():
    """primitive_v03: GLB read average_energy 2.41 (max 4.82, min 0.0), write 2.247; 0.3 prints `idle`, not `leak`,
    so no leakage is claimed. The names have no instance ranges: one instance each."""
    t = read_accelergy(DATA / "primitive_v03.ERT_summary.yaml", DATA / "primitive_v03.ART_summary.yaml")
    glb = t.component("GLB")
    assert (t.version, glb.energy_pj("read"), glb.energy_pj("write"), glb.instances) == ("0.3", 2.41, 2.247, 1)
    assert glb.leak_pj_per_cycle is None and glb.energy_pj("idle") == 0.0
    assert glb.area_um2_per_instance == 29133.3


@pytest.mark.parametrize("name, instances, short", [
    ("System_top_level.DRAM[1..1]", 1, "DRAM"),
    ("System_top_level.PEWeightRegs[1..256]", 256, "PEWeightRegs"),
    ("eyeriss_like.PE[0..167].mac", 168, "mac"),  # 0.3 counts from 0: 167 - 0 + 1
    ("chip.PE[0..3].lane[1..8].mac", 32, "mac"),  # nested ranges multiply: 4 x 8
    ("simple_primitive.GLB", 1, "GLB"),
])
def test_instances_from_the_name(name, instances, short):
    assert (instances_of(name), short_name(name)) == (instances, short)


def test_a_table_without_art_has_no_area():
    t = read_accelergy(CONV1D_ERT)
    assert t.component("Buffer").area_mm2 is None and t.art_path is None


# -- bad files: one ValueError line naming the file and the entry ----------------------------------------------------

GOOD_ERT = CONV1D_ERT.read_text()


@pytest.mark.parametrize("text, message", [
    (GOOD_ERT.replace("energy: 43.353054", "energy: -43.353054"), "'read' energy (pJ) must be a finite number >= 0"),
    (GOOD_ERT.replace("energy: 43.353054", "energy: .nan"), "'read' energy (pJ) must be a finite number >= 0"),
    (GOOD_ERT.replace("energy: 43.353054", "energy: .inf"), "'read' energy (pJ) must be a finite number >= 0"),
    (GOOD_ERT.replace("energy: 43.353054", "energy: lots"), "'read' energy (pJ) must be a finite number >= 0"),
    (GOOD_ERT.replace("energy: 43.353054", "energy: true"), "'read' energy (pJ) must be a finite number >= 0"),
    (GOOD_ERT.replace("version: '0.4'", "version: '0.7'"), "unknown version '0.7'"),
    (GOOD_ERT.replace("ERT_summary:", "ART_summary:"), "no top-level 'ERT_summary'"),
    (GOOD_ERT.replace("table_summary:", "tables:"), "table_summary must be a non-empty list"),
    (GOOD_ERT.replace("            energy: 0.845", "            power: 0.845"), "action 'compute' has no energy"),
    (GOOD_ERT.replace("[1..1]", "[3..1]", 1), "instance range [3..1] runs backwards"),
    (GOOD_ERT.replace("name: PE_top_level.Buffer[1..1]\n        actions",
                      "name: PE_top_level.MainMemory[1..1]\n        actions"), "listed twice"),
    (GOOD_ERT.replace("name: leak", "name: read", 1), "an action is listed twice"),
    ("ERT_summary: [unclosed", "not valid YAML"),
    ("just text", "no top-level 'ERT_summary'"),
])
def test_bad_ert_is_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "bad.ERT_summary.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        read_accelergy(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_bad_average_outside_its_bounds(tmp_path):
    path = tmp_path / "v03.yaml"
    path.write_text((DATA / "primitive_v03.ERT_summary.yaml").read_text().replace("average_energy: 2.41",
                                                                                 "average_energy: 9.41"))
    with pytest.raises(ValueError, match=r"component 'simple_primitive.GLB'.*average_energy 9.41 lies outside"):
        read_accelergy(path)


def test_missing_folder_and_mismatched_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_accelergy(tmp_path / "nope.yaml")
    with pytest.raises(ValueError, match="is a folder"):
        read_accelergy(tmp_path)
    with pytest.raises(ValueError, match="none of its components .* is in the ERT"):
        read_accelergy(CONV1D_ERT, DATA / "simba_like.ART_summary.yaml")
    with pytest.raises(ValueError, match=r"version 0.3 differs from the ERT's \(0.4"):
        read_accelergy(CONV1D_ERT, DATA / "primitive_v03.ART_summary.yaml")
    art = tmp_path / "bad.ART_summary.yaml"
    art.write_text(CONV1D_ART.read_text().replace("area: 887.84", "area: -887.84"))
    with pytest.raises(ValueError, match=r"component 'PE_top_level.Buffer\[1..1\]' area \(um\^2\) must be a finite"):
        read_accelergy(CONV1D_ERT, art)
    (tmp_path / "latin1.yaml").write_bytes(b"ERT_summary: \xe9")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_accelergy(tmp_path / "latin1.yaml")


def test_component_record_validates():
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        AccelergyComponent("x", 1, (("read", float("nan")),))
    with pytest.raises(ValueError, match="instances must be an integer"):
        AccelergyComponent("x", 0, (("read", 1.0),))
    with pytest.raises(ValueError, match="listed twice"):
        AccelergyComponent("x", 1, (("read", 1.0), ("read", 2.0)))
    with pytest.raises(ValueError, match="no action 'write'"):
        AccelergyComponent("x", 1, (("read", 1.0),)).energy_pj("write")


# -- the map onto dsasim's levels and units --------------------------------------------------------------------------

def test_map_onto_the_blog_machine():
    """DDR <- MainMemory, 8 bytes per access (width 64 bits): 43.353054 / 8 = 5.41913175 pJ per byte read, which
    Timeloop prints as "Energy (per-scalar-access) : 5.42 pJ"; SRAM <- Buffer, 1 byte: 0.42564 pJ per byte. The
    TensorCore: 0.845 pJ per MAC; its area 332.25 um^2 per MAC x 16 x 24 = 384 MACs = 127584 um^2 = 0.127584 mm^2;
    no leak action in the table, so no leakage claimed."""
    e = accelergy_energies(read_accelergy(CONV1D_ERT, CONV1D_ART), _conv1d_map(), BLOG)
    assert [lv.level for lv in e.levels] == ["DDR", "SRAM"]
    ddr = e.level("DDR")
    assert ddr.read_pj_per_byte == 43.353054 / 8 and ddr.write_pj_per_byte == 30.878292 / 8
    assert ddr.leak_pj_per_cycle == 0.007972 and ddr.area_mm2 == pytest.approx(0.707084)
    assert e.level("SRAM").read_pj_per_byte == 0.42564
    tc = e.unit("tensorcore")
    assert (tc.pj_per_op, tc.operators, tc.leak_pj_per_cycle) == (0.845, 384, None)
    assert tc.area_mm2 == pytest.approx(0.127584, rel=1e-12)
    assert e.unit("vector") is None  # unmapped: the result says so, no zero


def test_map_scales_leak_by_the_tables_instances():
    """simba_like's PEAccuBuffer[1..64] as blog-l1's L1acc: leak 0.003416 x 64 = 0.218624 pJ per cycle; the MAC's
    leak 0.0036 pJ x 384 MACs of the blog TensorCore = 1.3824 pJ per cycle."""
    t = read_accelergy(DATA / "simba_like.ERT_summary.yaml", DATA / "simba_like.ART_summary.yaml")
    bindings = (AccelergyBinding("DDR", "DRAM", 8), AccelergyBinding("SRAM", "GlobalBuffer", 32),
                AccelergyBinding("L1w", "PEWeightBuffer", 8), AccelergyBinding("L1i", "PEInputBuffer", 8),
                AccelergyBinding("L1acc", "PEAccuBuffer", 3), AccelergyBinding("tensorcore", "mac"))
    e = accelergy_energies(t, bindings, BLOG_L1)
    assert [lv.level for lv in e.levels] == ["DDR", "SRAM", "L1w", "L1i", "L1acc"]
    assert e.level("L1acc").leak_pj_per_cycle == pytest.approx(0.218624, rel=1e-12)
    assert e.level("SRAM").read_pj_per_byte == 51.870888 / 32
    assert e.unit("tensorcore").leak_pj_per_cycle == pytest.approx(1.3824, rel=1e-12)


@pytest.mark.parametrize("changes, message", [
    ({"SRAM": None}, r"level\(s\) \['SRAM'\] of hardware 'blog' have no component"),
    ({"tensorcore": None}, "the tensorcore has no component"),
    ({"L9": AccelergyBinding("L9", "Buffer", 1)}, r"\['L9'\] is not a level or unit of hardware 'blog'"),
    ({"SRAM": AccelergyBinding("SRAM", "GlobalBuffer", 1)}, "no component 'GlobalBuffer'; its components are"),
    ({"SRAM": AccelergyBinding("SRAM", "MACC", 1)}, r"has no \['read', 'write'\] action"),
    ({"SRAM": AccelergyBinding("SRAM", "Buffer")}, "level 'SRAM' needs access_bytes"),
    ({"tensorcore": AccelergyBinding("tensorcore", "MACC", action="mac_random")}, "has no action 'mac_random'"),
    ({"tensorcore": AccelergyBinding("tensorcore", "MACC", 1)}, "takes no access_bytes"),
])
def test_bad_map_is_one_line(changes, message):
    with pytest.raises(ValueError, match=message) as err:
        accelergy_energies(read_accelergy(CONV1D_ERT, CONV1D_ART), _conv1d_map(**changes), BLOG)
    assert "\n" not in str(err.value)


def test_binding_validates():
    with pytest.raises(ValueError, match="access_bytes must be an integer from 1"):
        AccelergyBinding("SRAM", "Buffer", 0)
    with pytest.raises(ValueError, match="component must be a non-empty string"):
        AccelergyBinding("SRAM", "", 1)


# -- the [accelergy] section of a hardware file ----------------------------------------------------------------------

def _section(**changes) -> dict:
    section = {"ert": CONV1D_ERT.name, "art": CONV1D_ART.name,
               "levels": {"DDR": {"component": "MainMemory", "access_bytes": 8},
                          "SRAM": {"component": "Buffer", "access_bytes": 1}},
               "units": {"tensorcore": "MACC"}}
    section.update(changes)
    return section


def test_toml_section_paths_are_relative_to_the_hardware_file():
    hw = accelergy_from_toml(DATA / "hw.toml", _section(), BLOG)
    assert (hw.dram_pj_per_bit, hw.sram_read_pj, hw.mac_pj) == (43.353054 / 8 / 8, 0.42564, 0.845)


def test_with_accelergy_sets_the_energy_fields():
    """The conv1d table on the blog machine: DDR 43.353054 pJ per 8-byte read = 0.677391... pJ/bit, writes
    30.878292 / 64 pJ/bit; the SRAM 0.42564 pJ per 1-byte access; its leak 0.000861 pJ per cycle at 1 GHz =
    0.000861 mW; area 887.84 um^2 = 0.00088784 mm^2; the MAC 0.845 pJ, 384 x 332.25 um^2 = 0.127584 mm^2. At a 0.5 GHz
    Accelergy clock the same leak per cycle is half the power, 0.0004305 mW."""
    from dsasim.energy.costs import EnergyCosts

    e = accelergy_energies(read_accelergy(CONV1D_ERT, CONV1D_ART), _conv1d_map(), BLOG)
    hw = with_accelergy(BLOG, e)
    costs = EnergyCosts.of(hw)
    assert costs.level("DDR").read_pj_per_byte == pytest.approx(43.353054 / 8, rel=1e-12)
    assert costs.level("DDR").write_pj_per_byte == pytest.approx(30.878292 / 8, rel=1e-12)
    sram = costs.level("SRAM")
    assert (sram.access_bytes, sram.read_pj.value, sram.write_pj.value) == (1, 0.42564, 0.42564)
    assert sram.leakage_mw.value == pytest.approx(0.000861, rel=1e-12)
    assert sram.area_mm2.value == pytest.approx(0.00088784, rel=1e-12)
    assert costs.mac_pj.value == 0.845 and costs.tensorcore_area_mm2.value == pytest.approx(0.127584, rel=1e-12)
    assert with_accelergy(BLOG, e, 5e8).sram_leakage_mw == pytest.approx(0.0004305, rel=1e-12)
    with pytest.raises(ValueError, match="clock_hz must be a positive number"):
        with_accelergy(BLOG, e, 0.0)


def test_with_accelergy_prices_inner_levels():
    """blog-l1 priced by simba_like: L1w <- PEWeightBuffer (8-byte access, read 121.36387 pJ, leak 0.104535 x 64
    instances = 6.69024 pJ per cycle = 6.69024 mW at 1 GHz)."""
    t = read_accelergy(DATA / "simba_like.ERT_summary.yaml", DATA / "simba_like.ART_summary.yaml")
    bindings = (AccelergyBinding("DDR", "DRAM", 8), AccelergyBinding("SRAM", "GlobalBuffer", 32),
                AccelergyBinding("L1w", "PEWeightBuffer", 8), AccelergyBinding("L1i", "PEInputBuffer", 8),
                AccelergyBinding("L1acc", "PEAccuBuffer", 3), AccelergyBinding("tensorcore", "mac"))
    hw = with_accelergy(BLOG_L1, accelergy_energies(t, bindings, BLOG_L1))
    l1w = hw.level("L1w")
    assert (l1w.access_bytes, l1w.read_pj, l1w.write_pj) == (8, 121.36387, 120.78787)
    assert l1w.leakage_mw == pytest.approx(6.69024, rel=1e-12)
    assert hw.dram_pj_per_bit == 8.0  # LPDDR4: 512 pJ per 64-bit access


def test_hardware_file_with_an_accelergy_section(tmp_path):
    """`dsasim.hardware.from_toml` reads [accelergy]: a Timeloop user's tables drop into a hardware file."""
    from dsasim.hardware import from_toml

    for name in (CONV1D_ERT.name, CONV1D_ART.name):
        (tmp_path / name).write_text((DATA / name).read_text())
    (tmp_path / "hw.toml").write_text(
        'base = "blog"\ntensorcore_in_channels = 1\ntensorcore_out_channels = 1\n[accelergy]\n'
        f'ert = "{CONV1D_ERT.name}"\nart = "{CONV1D_ART.name}"\n'
        '[accelergy.levels]\nDDR = { component = "MainMemory", access_bytes = 8 }\n'
        'SRAM = { component = "Buffer", access_bytes = 1 }\n[accelergy.units]\ntensorcore = "MACC"\n')
    hw = from_toml(tmp_path / "hw.toml")
    assert (hw.sram_read_pj, hw.mac_pj, hw.tensorcore_area_mm2) == (0.42564, 0.845, 332.25 / 1e6)
    (tmp_path / "bad.toml").write_text('base = "blog"\n[accelergy]\nert = "nope.yaml"\n')
    with pytest.raises(ValueError, match=r"Accelergy ERT file .*nope.yaml does not exist"):
        from_toml(tmp_path / "bad.toml")


@pytest.mark.parametrize("changes, message", [
    ({"ert": None}, "accelergy.ert must be a file path"),
    ({"colour": "red"}, r"unknown key\(s\) \['colour'\]"),
    ({"levels": {"DDR": {"component": "MainMemory", "bytes": 8}}}, r"accelergy.levels.DDR: unknown key\(s\) \['bytes'\]"),
    ({"units": {"tensorcore": {"action": "compute"}}}, "accelergy.units.tensorcore: missing 'component'"),
    ({"units": {"tensorcore": "MACC", "SRAM": "Buffer"}}, r"\['SRAM'\] listed under the wrong table"),
    ({"levels": {"DDR": {"component": "MainMemory", "access_bytes": 8}}}, r"level\(s\) \['SRAM'\] .* no component"),
    ({"ert": "missing.yaml"}, "missing.yaml does not exist"),
])
def test_bad_toml_section_is_one_line(changes, message):
    section = _section(**changes)
    if section.get("ert") is None:
        section["ert"] = 3
    with pytest.raises(ValueError, match=message) as err:
        accelergy_from_toml(DATA / "hw.toml", section, BLOG)
    assert "\n" not in str(err.value)


def test_float_versions_and_strings_agree():
    """Accelergy 0.3 prints `version: 0.3` (a YAML float), 0.4 `version: '0.4'` (a string): both read."""
    assert read_accelergy(DATA / "primitive_v03.ERT_summary.yaml").version == "0.3"
    assert not math.isnan(read_accelergy(DATA / "dse_2024.ERT_summary.yaml").component("mac").energy_pj("compute"))
    assert dataclasses.is_dataclass(read_accelergy(CONV1D_ERT))


# -- the harvested SRAM points ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("stem, folder, component", [
    ("conv1d_2level", "02-model-conv1d+oc-2level/", "PE_top_level.MainMemory[1..1]"),
    ("dse_2024", "02_interface_and_design_space_exploration_2024/", "system_top_level.buffer[1..1]"),
    ("simba_like", "simba_like/", "System_top_level.GlobalBuffer[1..1]"),
])
def test_harvested_points_equal_the_copied_tables(stem, folder, component):
    """Three of the points come from files copied into tests/data/accelergy: the record's read, write, leak and area
    equal what the reader finds there (a typo in the record fails here)."""
    from dsasim.energy.accelergy_points import ACCELERGY_SRAM_POINTS
    [point] = [p for p in ACCELERGY_SRAM_POINTS if p.component == component and folder in p.path]
    c = read_accelergy(DATA / f"{stem}.ERT_summary.yaml", DATA / f"{stem}.ART_summary.yaml").component(component)
    assert (point.read_pj, point.write_pj, point.leak_pj_per_cycle, point.area_um2) == \
        (c.energy_pj("read"), c.energy_pj("write"), c.leak_pj_per_cycle, c.area_um2_per_instance)


def test_harvested_points_capacity_and_order():
    """512 x 128 bits = 8 KiB; 32768 x 64 bits = 256 KiB; the tuple sorted by node then capacity."""
    from dsasim.energy.accelergy_points import ACCELERGY_SRAM_POINTS, AccelergySramPoint
    caps = {(p.node_nm, p.depth, p.width_bits): p.capacity_bytes for p in ACCELERGY_SRAM_POINTS}
    assert caps[(45, 512, 128)] == 8192 and caps[(40, 32768, 64)] == 262144
    keys = [(p.node_nm, p.capacity_bytes) for p in ACCELERGY_SRAM_POINTS]
    assert keys == sorted(keys)
    with pytest.raises(ValueError, match="read_pj must be a positive finite number"):
        dataclasses.replace(ACCELERGY_SRAM_POINTS[0], read_pj=float("inf"))
    assert isinstance(ACCELERGY_SRAM_POINTS[0], AccelergySramPoint)


def test_vector_unit_priced_per_lane():
    """The vector unit mapped to the conv1d table's MACC (an 8-bit intmac, 0.845 pJ per compute): 0.845 pJ per lane
    operation, area 332.25 um^2 x the blog's 32 lanes = 0.010632 mm^2; the TensorCore keeps its own 384 MACs."""
    e = accelergy_energies(read_accelergy(CONV1D_ERT, CONV1D_ART),
                           _conv1d_map(vector=AccelergyBinding("vector", "MACC")), BLOG)
    assert (e.unit("vector").operators, e.unit("tensorcore").operators) == (32, 384)
    hw = with_accelergy(BLOG, e)
    assert hw.vector_lane_op_pj == 0.845
    assert hw.vector_area_mm2 == pytest.approx(0.010632, rel=1e-12)
