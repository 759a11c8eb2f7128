"""One memory tree: the SRAM is a validated `MemoryLevel` like the inner levels, the hardware exposes the whole
tree (DDR -> SRAM -> inner levels, with parent links), and every feature that models the SRAM only refuses
hardware with levels below it through one function (`dsasim.one_level.require_one_level`) and one table."""

from __future__ import annotations

import dataclasses

import pytest

from cli_helpers import one_line_error
from dsasim.hardware import (DDR, GLOBAL_LEVEL, KIB, MAX_LEVEL_WAYS, PRESETS, ROLES, SRAM_LEVEL, Accelerator,
                             MemoryLevel, from_toml)
from dsasim.one_level import (ONE_LEVEL_FEATURES, MultiLevelHardwareError, one_level_features_markdown,
                              require_one_level)

BLOG = PRESETS["blog"]
L1 = PRESETS["blog-l1"]


# ------------------------------------------------------------------------------------ the SRAM as a level
@pytest.mark.parametrize("kwargs, words", [
    (dict(name="SRAM"), "the name is reserved"),  # by hand, as an inner level
    (dict(name="DDR"), "the name is reserved"),
    (dict(name="DDR", kind=GLOBAL_LEVEL, parent="DDR"), "the global level is the one 'SRAM'"),
    (dict(name="L1", kind=GLOBAL_LEVEL, parent="DDR"), "the global level is the one 'SRAM'"),
    (dict(name="SRAM", kind=GLOBAL_LEVEL), "got name 'SRAM', parent 'SRAM'"),  # the global level hangs below DDR
    (dict(kind="sram"), "kind must be one of"),
])
def test_the_reserved_names_are_refused_by_hand(kwargs, words):
    base = dict(name="L1", capacity_bytes=1024, bytes_per_cycle=64.0)
    with pytest.raises(ValueError, match=words):
        MemoryLevel(**{**base, **kwargs})


def test_the_sram_level_is_what_the_fields_say():
    # blog: 1536 KiB of SRAM fed at 32 B/cycle with 64 setup cycles per DMA transfer (its preset's fields)
    assert BLOG.sram_level == MemoryLevel("SRAM", 1536 * 1024, 32.0, holds=ROLES, parent="DDR", setup_cycles=64,
                                          max_ways=MAX_LEVEL_WAYS, kind=GLOBAL_LEVEL)
    hw = dataclasses.replace(BLOG, name="odd", sram_bytes=4096, dram_bytes_per_cycle=8.5, dma_setup_cycles=7)
    lv = hw.sram_level
    assert (lv.name, lv.capacity_bytes, lv.bytes_per_cycle, lv.setup_cycles, lv.parent, lv.holds, lv.kind) == (
        "SRAM", 4096, 8.5, 7, "DDR", ("input", "weight", "output"), "global")
    assert hw.levels[0] is lv  # the tree's first level is the SRAM itself


def test_a_hardware_file_cannot_declare_the_kind(tmp_path):
    f = tmp_path / "hw.toml"
    f.write_text('name = "x"\nbase = "blog"\n[[inner_levels]]\nname = "SRAM"\ncapacity_bytes = 1024\n'
                 'bytes_per_cycle = 64.0\nkind = "global"\n')
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['kind'\]"):
        from_toml(f)


# -------------------------------------------------------------------------------------------- the tree
def test_the_tree_walk_from_ddr_down():
    assert [lv.name for lv in L1.levels] == ["SRAM", "L1w", "L1i", "L1acc"]
    assert [lv.name for lv in L1.children(DDR)] == ["SRAM"]
    assert [lv.name for lv in L1.children(SRAM_LEVEL)] == ["L1w", "L1i", "L1acc"]
    assert L1.children("L1w") == () and BLOG.children(SRAM_LEVEL) == ()
    # every level's parent link leads up to DDR, the root
    for lv in L1.levels:
        up = [lv.name]
        while up[-1] != DDR:
            up.append(L1.level(up[-1]).parent)
        assert up[-2:] == [SRAM_LEVEL, DDR] or up == [SRAM_LEVEL, DDR]
    with pytest.raises(ValueError, match="no memory level 'L9'"):
        L1.children("L9")


def test_a_path_goes_down_two_inner_levels():
    # L2 (every role) below the SRAM, L1 (weights) below L2: a weight passes SRAM, L2, L1; an input stops at L2
    hw = dataclasses.replace(BLOG, name="deep", inner_levels=(
        MemoryLevel("L2", 256 * KIB, 64.0), MemoryLevel("L1", 16 * KIB, 64.0, holds=("weight",), parent="L2")))
    assert [lv.name for lv in hw.path("weight")] == ["SRAM", "L2", "L1"]
    assert [lv.name for lv in hw.path("input")] == ["SRAM", "L2"]
    assert [lv.name for lv in BLOG.path("output")] == ["SRAM"]


# ------------------------------------------------------------------------ the one-level features, refused
LIBRARY_ONLY = {"search"}  # `dsasim search LAYER` on levels runs the per-level search, so no CLI refusal
CLI_REFUSALS = [
    ("chain search", ["search", "resnet18.layer1.0", "--hardware", "blog-l1"]),
    ("chain sweep", ["sweep-sram", "resnet18.layer1.0", "--sizes", "1MiB", "--hardware", "blog-l1"]),
    ("attention search", ["search", "attention:h=4,n=64,d=16", "--hardware", "blog-l1"]),
    ("shape sweep", ["shapes", "gemm-64", "--vary", "m=1:4", "--hardware", "blog-l1"]),
    ("--no-simulate", ["search", "gemm-64", "--hardware", "blog-l1", "--no-simulate"]),
    ("--no-simulate", ["sweep-sram", "gemm-64", "--hardware", "blog-l1", "--sizes", "1KiB", "--no-simulate"]),
]
LEVELS = "models one on-chip level (the SRAM), but hardware 'blog-l1' has levels below it (L1w, L1i, L1acc)"


def test_every_feature_of_the_table_is_tried():
    assert {f for f, _ in CLI_REFUSALS} | LIBRARY_ONLY == set(ONE_LEVEL_FEATURES)


@pytest.mark.parametrize("feature, argv", CLI_REFUSALS, ids=[" ".join(a)[:60] for _, a in CLI_REFUSALS])
def test_each_refusal_on_the_command_line(feature, argv, capsys):
    line = one_line_error(argv, capsys, ONE_LEVEL_FEATURES[feature].subject + " " + LEVELS)
    # and says what to do instead (the feature's row)
    assert line.endswith("which its figures would leave out; " + ONE_LEVEL_FEATURES[feature].instead.format(
        hw="blog-l1"))


@pytest.mark.parametrize("feature", list(ONE_LEVEL_FEATURES))
def test_each_refusal_in_the_library(feature):
    with pytest.raises(MultiLevelHardwareError, match=r"^" + ONE_LEVEL_FEATURES[feature].subject.replace(
            "(", r"\(").replace(")", r"\)") + " " + LEVELS.replace("(", r"\(").replace(")", r"\)")) as info:
        require_one_level(L1, feature)
    assert (info.value.feature, info.value.hardware) == (feature, "blog-l1")
    assert isinstance(info.value, ValueError)
    require_one_level(BLOG, feature)  # one level: nothing to refuse


def test_the_library_entry_points_refuse_before_any_work():
    from dsasim.architect.problems.chain_catalogue import parse_chain
    from dsasim.architect.search.fused_search import search_chain
    from dsasim.architect.problems.layers import MatmulProblem
    from dsasim.architect.search.layer_search import search
    from dsasim.architect.studies.shapes import sweep_shapes
    from dsasim.architect.studies.chain_target import ChainTarget
    from dsasim.architect.studies.sweep import sweep_chain
    from dsasim.architect.problems.attention import AttentionProblem
    from dsasim.architect.search.attention_search import search_attention

    chain = parse_chain("resnet18.layer1.0")
    calls = {
        "search": lambda: search(MatmulProblem(8, 8, 8), L1),
        "chain search": lambda: search_chain(chain, L1),
        "chain sweep": lambda: sweep_chain(ChainTarget("c", chain, L1), [1 << 20]),
        "shape sweep": lambda: sweep_shapes(MatmulProblem(8, 8, 8), "m", [1, 2], L1),
        "attention search": lambda: search_attention(AttentionProblem(1, 1, 1, 8, 8, 4), L1),
    }
    for feature, call in calls.items():
        with pytest.raises(MultiLevelHardwareError) as info:
            call()
        assert info.value.feature == feature


def test_an_unknown_feature_is_a_programming_error():
    with pytest.raises(KeyError, match="unknown feature 'network'"):
        require_one_level(BLOG, "network")


def test_the_docs_list_names_every_feature():
    text = one_level_features_markdown()
    assert text.count("\n") == len(ONE_LEVEL_FEATURES)
    for key, row in ONE_LEVEL_FEATURES.items():
        assert f"* **{key}**: command line {row.command}; library {row.library}." in text


def test_a_table_row_is_validated():
    from dsasim.one_level import OneLevelFeature
    with pytest.raises(ValueError, match="instead must be a non-empty string"):
        OneLevelFeature("x", "y", "z", "")


def test_the_trees_of_two_accelerators_do_not_mix():
    a = Accelerator(name="a", sram_bytes=2048, word_bytes=1)
    b = dataclasses.replace(a, name="b", sram_bytes=4096)
    assert (a.sram_level.capacity_bytes, b.sram_level.capacity_bytes) == (2048, 4096)


def test_the_levels_page_lists_the_one_level_features_as_the_table_prints_them():
    """docs/model/levels.md holds `one_level_features_markdown()` verbatim, so the list cannot drift from the table."""
    from pathlib import Path

    from dsasim.one_level import one_level_features_markdown

    page = (Path(__file__).resolve().parent.parent / "docs" / "model" / "levels.md").read_text()
    assert one_level_features_markdown().rstrip("\n") in page
