"""Memory levels below the SRAM: the hardware's level stack, the per-level model of a LevelNest against an
independent brute-force walk of the nest, hand-derived counts, triggers, and the cost's bottleneck."""

from __future__ import annotations

import dataclasses
import random
import zlib

import numpy as np
import pytest

from dsasim.architect.model.hierarchy import COMPUTE, InnerTiling, LevelNest, analyze_levels, tensor_role
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem
from dsasim.hardware import KIB, PRESETS, MemoryLevel, from_toml, load_hardware

BLOG = PRESETS["blog"]
L1 = PRESETS["blog-l1"]


# ------------------------------------------------------------------------------------------------ hardware
def test_blog_has_one_level_and_blog_l1_three_buffers_below_it():
    assert [lv.name for lv in BLOG.levels] == ["SRAM"]
    assert [lv.name for lv in L1.levels] == ["SRAM", "L1w", "L1i", "L1acc"]
    assert [lv.name for lv in L1.path("weight")] == ["SRAM", "L1w"]
    assert [lv.name for lv in L1.path("output")] == ["SRAM", "L1acc"]
    assert L1.sram_level.capacity_bytes == L1.sram_bytes and L1.sram_level.bytes_per_cycle == 32.0
    # blog-l1 changes nothing above the SRAM
    assert dataclasses.replace(L1, name="blog", inner_levels=()) == BLOG


@pytest.mark.parametrize("levels, words", [
    ((MemoryLevel("L1", 2 << 20, 64.0),), "larger than its parent"),
    ((MemoryLevel("L1", 1024, 64.0, parent="L2"),), "not 'SRAM' or a level listed before"),
    ((MemoryLevel("L2", 4096, 64.0, holds=("weight",)), MemoryLevel("L1", 1024, 64.0, holds=("input",), parent="L2")),
     "could never reach it"),
    ((MemoryLevel("A", 1024, 64.0, holds=("weight", "input")), MemoryLevel("B", 1024, 64.0, holds=("input",))),
     "would not know which"),
    ((MemoryLevel("A", 1024, 64.0), MemoryLevel("A", 512, 64.0, parent="A")), "two memory levels are named 'A'"),
])
def test_nonsense_level_stacks_are_refused_with_the_reason(levels, words):
    with pytest.raises(ValueError, match=words):
        dataclasses.replace(BLOG, inner_levels=levels)


@pytest.mark.parametrize("kwargs, words", [
    (dict(bytes_per_cycle=0), "zero bandwidth"),
    (dict(capacity_bytes=0), "capacity_bytes must be a positive integer"),
    (dict(holds=("weights",)), "unknown role"),
    (dict(holds=()), "it is empty"),
    (dict(name="SRAM"), "reserved"),
    (dict(max_ways=0), "max_ways"),
])
def test_a_level_checks_its_own_fields(kwargs, words):
    base = dict(name="L1", capacity_bytes=1024, bytes_per_cycle=64.0)
    with pytest.raises(ValueError, match=words):
        MemoryLevel(**{**base, **kwargs})


def test_levels_from_toml(tmp_path):
    good = tmp_path / "two.toml"
    good.write_text('base = "blog"\n[[inner_levels]]\nname = "L1"\ncapacity_bytes = 8192\nbytes_per_cycle = 64\n'
                    'holds = ["weight", "output"]\n')
    hw = load_hardware(good)
    assert [lv.name for lv in hw.levels] == ["SRAM", "L1"] and hw.level("L1").holds == ("weight", "output")
    assert [lv.name for lv in hw.path("input")] == ["SRAM"]  # the TensorCore reads the image from the SRAM
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "blog"\n[[inner_levels]]\nname = "L1"\ncapacity_bytes = 8192\nbytes_per_cycle = 0\n')
    with pytest.raises(ValueError, match=r"bad.toml.*zero bandwidth"):
        from_toml(bad)
    typo = tmp_path / "typo.toml"
    typo.write_text('base = "blog"\n[[inner_levels]]\nname = "L1"\ncapacity = 8192\nbytes_per_cycle = 8\n')
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['capacity'\]"):
        from_toml(typo)


def test_tensor_roles():
    conv, mm = ConvProblem(1, 4, 4, 5, 5, 3), MatmulProblem(4, 5, 6)
    assert [tensor_role(conv, n) for n in conv.tensor_names] == ["input", "weight", "output"]
    assert [tensor_role(mm, n) for n in mm.tensor_names] == ["input", "weight", "output"]


# --------------------------------------------------------------------------------- an independent walk
def _rows(lo: int, hi: int, t0: int, t1: int, axis) -> tuple[int, int]:
    """The tight interval of real input rows that outputs lo..hi-1 and taps t0..t1-1 read, by enumeration."""
    rows = [o * axis.stride + t * axis.dilation - axis.padding for o in range(lo, hi) for t in range(t0, t1)]
    rows = [r for r in rows if 0 <= r < axis.size]
    return (min(rows), max(rows) + 1) if rows else (0, 0)


def _box(problem, tensor: str, ranges: dict) -> tuple:
    box = []
    for a in problem.tensor(tensor).axes:
        box.append(_rows(*ranges[a.dim], *ranges[a.tap], a) if a.is_window else ranges[a.dim])
    return tuple(box)


def _size(box) -> int:
    return int(np.prod([hi - lo for lo, hi in box]))


def walk(nest: LevelNest) -> dict[str, dict[str, int]]:
    """Execute the nest's loops one iteration at a time and count, per level: bytes loaded from the parent and
    written back, transfers, and the largest live bytes. An inner output box is loaded when its partial sums
    exist above it: written back from this level before, or brought into the SRAM from DDR."""
    p, outer, hw = nest.problem, nest.outer, nest.hardware
    word = hw.word_bytes
    loops = [(d, outer.tile(d), 0) for d in outer.order] + [(d, nest.inner_tiles[d], 1) for d in nest.inner.order]
    n_outer = len(outer.order)
    stage = {}  # (tensor, level name) -> flat depth
    for t in p.tensor_names:
        stage[t, "SRAM"] = outer.depth(t)
        if t in nest.levels:
            k = nest.inner_depth[t]
            stage[t, nest.levels[t].name] = nest.outer_depth[t] if k is None else n_outer + k
    ways = {(t, "SRAM"): outer.ways_of(t) for t in p.tensor_names}
    ways.update({(t, nest.levels[t].name): nest.inner_ways[t] for t in nest.levels})
    names = ["SRAM"] + [lv.name for lv in hw.inner_levels]
    count = {lv: dict(loaded=0, stored=0, transfers=0, peak=0) for lv in names}
    out = p.output.name
    written = {lv: np.zeros(p.shape(out), bool) for lv in names}  # elements written back from each level
    from_ddr = np.zeros(p.shape(out), bool)  # output elements whose partial sums were loaded from DDR
    live: dict = {}

    def sl(box):
        return tuple(slice(lo, hi) for lo, hi in box)

    def enter(depth: int, ranges: dict) -> None:
        for (t, lv), k in stage.items():
            if k != depth:
                continue
            box = _box(p, t, ranges)
            live[t, lv] = box
            c = count[lv]
            if p.tensor(t).output:
                partial = written[lv][sl(box)].any() or (lv != "SRAM" and (
                    from_ddr[sl(box)].any() or written["SRAM"][sl(box)].any()))
                if partial:
                    c["loaded"] += _size(box) * word
                    c["transfers"] += 1
                    if lv == "SRAM":
                        from_ddr[sl(box)] = True
            elif _size(box):
                c["loaded"] += _size(box) * word
                c["transfers"] += 1

    def leave(depth: int) -> None:
        for (t, lv), k in stage.items():
            if k == depth and p.tensor(t).output:
                box = live[t, lv]
                count[lv]["stored"] += _size(box) * word
                count[lv]["transfers"] += 1
                written[lv][sl(box)] = True

    def run(i: int, ranges: dict) -> None:
        enter(i, ranges)
        if i == len(loops):
            for lv in names:
                live_bytes = sum(ways[key] * _size(box) * word for key, box in live.items() if key[1] == lv)
                count[lv]["peak"] = max(count[lv]["peak"], live_bytes)
        else:
            d, tile, _ = loops[i]
            lo, hi = ranges[d]
            for start in range(lo, hi, tile):
                run(i + 1, {**ranges, d: (start, min(start + tile, hi))})
        leave(i)

    run(0, {d: (0, e) for d, e in p.extents.items()})
    return count


def random_level_nest(rng: random.Random, hw) -> LevelNest:
    if rng.random() < 0.7:
        k = rng.choice([1, 2, 3])
        dilation = rng.choice([1, 1, 2]) if k > 1 else 1
        reach = dilation * (k - 1) + 1
        p = ConvProblem(rng.randint(1, 2), rng.randint(1, 20), rng.randint(1, 30), rng.randint(reach, 9),
                        rng.randint(reach, 9), k, stride=rng.choice([1, 2]), padding=rng.randint(0, k - 1),
                        dilation=dilation)
    else:
        p = MatmulProblem(rng.randint(1, 12), rng.randint(1, 30), rng.randint(1, 20))
    order = list(p.dims)
    rng.shuffle(order)
    tiles = {d: rng.randint(1, e) for d, e in p.extents.items()}
    stage = {t: rng.randint(0, len(order)) for t in p.tensor_names}
    outer = LoopNest(p, order, tiles, stage, {t: rng.choice([1, 2]) for t in p.tensor_names})
    inner_order = list(p.dims)
    rng.shuffle(inner_order)
    inner_tiles = {}
    for d in p.dims:
        t = outer.tile(d)
        inner_tiles[d] = rng.choice([v for v in range(1, t + 1) if t % v == 0] if outer.trips(d) > 1
                                    else list(range(1, t + 1)))
    roles = {t: tensor_role(p, t) for t in p.tensor_names}
    staged = [t for t in p.tensor_names if len(hw.path(roles[t])) > 1]
    inner_stage = {t: rng.randint(0, len(order)) if rng.random() < 0.7 else
                   f"outer:{rng.choice(['top', *order][outer.depth(t):])}" for t in staged}
    inner = InnerTiling(inner_order, inner_tiles, inner_stage,
                        {t: rng.choice([1, 2]) for t in staged})
    return LevelNest(outer, inner, hw)


SHARED = dataclasses.replace(BLOG, name="shared-l1", inner_levels=(
    MemoryLevel("L1", 64 * KIB, 48.0, holds=("input", "weight"), setup_cycles=3),
    MemoryLevel("acc", 16 * KIB, 24.0, holds=("output",)),
))
WEIGHTS_ONLY = dataclasses.replace(BLOG, name="wb", inner_levels=(MemoryLevel("wb", 8 * KIB, 16.0, holds=("weight",)),))


# each hierarchy's 40 nests walked in four quarters (one test each: blog-l1's 40 walks take about 100 s), so xdist
# spreads them over its workers; the nests are drawn in one sequence as before, so every one of them is walked
@pytest.mark.parametrize("quarter", range(4))
@pytest.mark.parametrize("hw", [L1, SHARED, WEIGHTS_ONLY], ids=lambda h: h.name)
def test_the_model_equals_a_brute_force_walk_on_random_two_level_nests(hw, quarter):
    rng = random.Random(zlib.crc32(hw.name.encode()))
    nests = [random_level_nest(rng, hw) for _ in range(40)]
    for nest in nests[quarter::4]:
        model = analyze_levels(nest)
        seen = walk(nest)
        for lv in model.levels:
            got = seen[lv.level]
            assert (lv.loaded_bytes, lv.stored_bytes, lv.transfers) == (got["loaded"], got["stored"],
                                                                        got["transfers"]), (lv.level, nest.format())
            if len(lv.holds) == 1 or lv.level == "SRAM":  # exact for a level holding one tensor (and the SRAM)
                assert lv.peak_bytes == got["peak"], (lv.level, nest.format())
            else:  # several tensors: the sum of their largest boxes, never below the real peak
                assert lv.peak_bytes >= got["peak"], (lv.level, nest.format())


def test_blog_l1_counts_by_hand():
    """res2a_branch2b (3x3, 64->64, pad 1, 56x56): weights resident in SRAM, 8-row image slabs; below the SRAM
    24-channel weight blocks, 2-row output tiles, 16-channel image tiles."""
    p = ConvProblem(1, 64, 64, 56, 56, 3, padding=1)
    outer = LoopNest(p, ["n", "oc", "oh", "ow", "ic", "kh", "kw"], {"oh": 8},
                     {"image": "oh", "weight": "top", "output": "oh"})
    inner = InnerTiling(["n", "oc", "oh", "ic", "ow", "kh", "kw"], {"oh": 2, "oc": 24, "ic": 16},
                        {"weight": "oc", "image": "ic", "output": "oh"})
    a = analyze_levels(LevelNest(outer, inner, L1))
    # SRAM: 7 slabs of 8 output rows read 10, 10, ..., 9 at the borders: (9 + 5 x 10 + 9) rows x 56 x 64 + weights
    assert a.level("SRAM").loaded_bytes == (9 + 5 * 10 + 9) * 56 * 64 + 64 * 64 * 9
    assert a.level("SRAM").stored_bytes == 64 * 56 * 56
    # L1w: the whole weight (all ic, all taps) per 24-channel block, 3 blocks (24, 24, 16) per slab, 7 slabs
    w = a.level("L1w")
    assert (w.loaded_bytes, w.transfers) == (7 * 64 * 64 * 9, 7 * 3)
    assert w.peak_bytes == 24 * 64 * 9
    # L1i: per slab, block and 2-row tile, each 16-channel tile of the 4 (or 3 at a border) rows it reads
    # (3 oc blocks x all 64 channels): an inner slab's 4 tiles read 4 rows each, 3 at the image border
    first_last = 3 + 4 + 4 + 4
    i = a.level("L1i")
    assert i.loaded_bytes == 3 * 56 * 64 * (5 * 16 + 2 * first_last)
    assert i.transfers == 7 * 3 * 4 * 4 and i.peak_bytes == 16 * 4 * 56
    # L1acc: each (block, 2-row) output tile opens as zeros once (the ic loop is below it) and is written back once
    acc = a.level("L1acc")
    assert (acc.loaded_bytes, acc.stored_bytes, acc.transfers) == (0, 64 * 56 * 56, 7 * 3 * 4)
    assert acc.peak_bytes == 24 * 2 * 56
    # TensorCore: 64 / 16 input blocks x (24, 24, 16 -> 3 output blocks) per pixel and tap
    assert a.tensorcore_cycles == 4 * 3 * 56 * 56 * 9
    # 1-way buffers (the default): every transfer but the first of each waits for the TensorCore and holds it
    # up. L1w: 21 transfers, 7 x 36,864 B at 128 B/cycle + 4 setup cycles each, 20 of 21 exposed
    assert dict(a.exposed_cycles)["L1w"] == (7 * 64 * 64 * 9 / 128 + 21 * 4) * 20 / 21
    assert a.cycles == a.tensorcore_cycles + sum(c for _, c in a.exposed_cycles) and a.bottleneck == COMPUTE
    acts = {(t.level, t.tensor, t.action): (t.count, t.bytes) for t in a.triggers}
    assert acts["L1acc", "output", "zero-fill"] == (84, 0)
    assert acts["L1acc", "output", "write back"] == (84, 64 * 56 * 56)
    assert ("L1acc", "output", "load partial sums") not in acts
    # DDR -> SRAM: 7 image slabs, the weights once, 7 output slabs opened as zeros and written back
    assert acts["SRAM", "image", "load"] == (7, (9 + 5 * 10 + 9) * 56 * 64)
    assert acts["SRAM", "weight", "load"] == (1, 64 * 64 * 9)
    assert acts["SRAM", "output", "zero-fill"] == (7, 0) and acts["SRAM", "output", "write back"] == (7, 64 * 56 * 56)


def test_partial_sums_reload_below_the_sram_and_the_slowest_level_is_the_bottleneck():
    """A matmul with k split below the SRAM and the accumulator staged above the k loop: every k tile after the
    first reloads the partial sums from the SRAM; a narrow accumulator port makes it the bottleneck."""
    p = MatmulProblem(48, 48, 64)
    outer = LoopNest(p, ["m", "n", "k"], {}, {"a": "top", "b": "top", "c": "top"})
    inner = InnerTiling(["m", "n", "k"], {"m": 16, "n": 24, "k": 16}, {"a": "k", "b": "k", "c": "k"})
    slow = dataclasses.replace(L1, inner_levels=(*L1.inner_levels[:2],
                                                 dataclasses.replace(L1.inner_levels[2], bytes_per_cycle=0.5)))
    a = analyze_levels(LevelNest(outer, inner, slow))
    acc = a.level("L1acc")
    tiles = 3 * 2  # m tiles x n tiles
    assert acc.loaded_bytes == tiles * 3 * 16 * 24  # k tiles 2..4 reload
    assert acc.stored_bytes == tiles * 4 * 16 * 24
    assert acc.transfers == tiles * (3 + 4)
    assert acc.cycles == acc.transfers * 4 + (acc.loaded_bytes + acc.stored_bytes) / 0.5
    assert a.bottleneck == "L1acc" and a.cycles == acc.cycles


def test_bad_level_nests_say_why():
    p = ConvProblem(1, 32, 48, 8, 8, 3, padding=1)
    outer = LoopNest(p, list(p.dims), {"oc": 24}, {t: "top" for t in p.tensor_names})
    with pytest.raises(ValueError, match="does not divide the outer tile 24"):
        LevelNest(outer, InnerTiling(list(p.dims), {"oc": 16}, {t: "top" for t in p.tensor_names}), L1)
    with pytest.raises(ValueError, match="no level below the SRAM"):
        LevelNest(outer, InnerTiling(list(p.dims), {}, {"image": 0, "weight": 0}), WEIGHTS_ONLY)
    with pytest.raises(ValueError, match="allows 1 to 2 ways"):
        LevelNest(outer, InnerTiling(list(p.dims), {}, {t: 0 for t in p.tensor_names}, {"image": 3}), L1)
    with pytest.raises(ValueError, match=r"missing \['kw'\]"):
        LevelNest(outer, InnerTiling(list(p.dims)[:-1], {}, {t: 0 for t in p.tensor_names}), L1)
    # the outer oh loop runs once, so its inner tile need not divide anything
    LevelNest(outer, InnerTiling(list(p.dims), {"oh": 3}, {t: "top" for t in p.tensor_names}), L1)


# ---------------------------------------------------------------------------------------------- the search
SMALL_LEVELS = {  # a fast DDR port, so that the inner levels decide the cost
    "one tensor per level": (MemoryLevel("L1w", 16, 8.0, holds=("weight",), setup_cycles=2),
                             MemoryLevel("L1i", 8, 4.0, holds=("input",), setup_cycles=1),
                             MemoryLevel("L1acc", 16, 2.0, holds=("output",), setup_cycles=3)),
    # inputs and weights share a level too small to double both: which one to double is the search's choice
    "a shared level": (MemoryLevel("L1", 40, 4.0, holds=("input", "weight"), setup_cycles=2),
                       MemoryLevel("L1acc", 16, 2.0, holds=("output",), setup_cycles=3)),
}


# the space walked in three thirds by the m tile (4, 2, 1; one test each: a whole space took minutes on one xdist
# worker): in every third the search's tiling costs no more than any that fits, and in the third holding its own m
# tile one costs exactly as much, so over the three the least is the search's, as one walk of the whole space says
@pytest.mark.parametrize("m_tile", [4, 2, 1])
@pytest.mark.parametrize("levels", list(SMALL_LEVELS), ids=list(SMALL_LEVELS))
def test_the_inner_search_finds_the_cheapest_inner_tiling_of_a_small_space(levels, m_tile):
    """Every inner tiling of one outer nest (tiles from the divisors of the outer tile, every order, every
    staging among the inner loops or in the outer nest below the SRAM staging, 1 or 2 ways per tensor), each
    analysed on its own: the search's inner tiling costs the least among those that fit every level."""
    import itertools

    from dsasim.architect.search.level_search import _inner_search
    from dsasim.architect.search.objective import CYCLES

    hw = dataclasses.replace(L1, dram_bytes_per_cycle=1024.0, dma_setup_cycles=0, inner_levels=SMALL_LEVELS[levels])
    p = MatmulProblem(8, 8, 8)
    outer = LoopNest(p, ["m", "n", "k"], {"m": 4, "n": 4, "k": 4}, {"a": 2, "b": 2, "c": 2})
    sram = analyze_levels(LevelNest(outer, InnerTiling(["m", "n", "k"], {}, {n: 0 for n in p.tensor_names}), hw))
    ddr = sram.level("SRAM")
    key, nest, evaluations = _inner_search(outer, hw, p.tensor_names, ddr.cycles, ddr.traffic_bytes, CYCLES)
    assert evaluations > 0 and nest is not None
    found, found_m_tile = analyze_levels(nest), nest.inner_tiles["m"]
    assert found.fits and key[0] == found.cycles
    assert found.bottleneck not in ("SRAM", COMPUTE)
    best = None
    stagings = [0, 1, 2, 3, "outer:n", "outer:k"]
    seen = set()
    for tiles in itertools.product([m_tile], [4, 2, 1], [4, 2, 1]):  # (m, n, k)
        for order in itertools.permutations(p.dims):
            for stage in itertools.product(stagings, repeat=3):
                nest = LevelNest(outer, InnerTiling(order, dict(zip(p.dims, tiles)), dict(zip(p.tensor_names, stage))),
                                 hw)
                view = (tiles, tuple((tuple(sorted(t.items())), a) for t, a in map(nest.seen, p.tensor_names)))
                if view in seen:  # the same tiles and loops above every tensor: the same counts
                    continue
                seen.add(view)
                for ways in itertools.product([1, 2], repeat=3):  # 2-way: no transfer on the TensorCore's path
                    a = analyze_levels(LevelNest(outer, InnerTiling(nest.inner.order, nest.inner_tiles,
                                                                    dict(nest.inner.stage),
                                                                    dict(zip(p.tensor_names, ways))), hw))
                    if a.fits and (best is None or a.cycles < best):
                        best = a.cycles
    if m_tile == found_m_tile:
        assert best is not None and found.cycles == best
    else:
        assert best is None or found.cycles <= best


def test_search_levels_on_blog_l1():
    """res2a_branch2b: the SRAM level is the one-level search's best; each level moves at least its bound; the
    result is the model of its own nest; with a weight buffer too small for the layer's weights the weights are
    streamed through it more than once."""
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.level_search import search_levels
    from dsasim.architect.search.layer_search import search

    p = parse_layer("resnet50.res2a_branch2b")
    r = search_levels(p, L1, objective="traffic")
    a = r.best
    assert a.fits and a.to_json() == analyze_levels(a.nest).to_json()
    assert a.level("SRAM").traffic_bytes == search(p, BLOG, objective="traffic").best.traffic_bytes
    for lv in a.levels:
        assert lv.traffic_bytes >= lv.bound_bytes
    assert a.level("L1w").traffic_bytes == 64 * 64 * 9  # 36 KiB of weights fit the 64 KiB weight buffer: once
    small = dataclasses.replace(L1, inner_levels=(dataclasses.replace(L1.inner_levels[0], capacity_bytes=4 * KIB),
                                                  *L1.inner_levels[1:]))
    b = search_levels(p, small, objective="traffic").best
    assert b.fits and b.level("L1w").peak_bytes <= 4 * KIB
    assert b.level("L1w").traffic_bytes > 64 * 64 * 9
    with pytest.raises(ValueError, match="no level below the SRAM"):
        search_levels(p, BLOG)


def test_one_level_paths_refuse_inner_levels():
    from dsasim.architect.search.layer_search import search

    with pytest.raises(ValueError, match="this search models one on-chip level"):
        search(MatmulProblem(8, 8, 8), L1)


def test_the_command_line_on_blog_l1(tmp_path, capsys):
    """`dsasim search` and `dsasim sweep-sram --level` on blog-l1: per-level figures printed, JSON byte-identical
    run to run, its nest reloadable and equal to its figures, each swept size the level's capacity."""
    import json

    from dsasim.architect.search.level_search import with_level_capacity
    from dsasim.cli import main

    layer = "gemm:m=64,n=48,k=64"
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in paths:
        assert main(["search", layer, "--hardware", "blog-l1", "--objective", "cycles", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bottleneck" in out and "control triggers" in out and "L1acc" in out
    assert paths[0].read_bytes() == paths[1].read_bytes()
    data = json.loads(paths[0].read_text())
    assert [lv["level"] for lv in data["levels"]] == ["SRAM", "L1w", "L1i", "L1acc"]
    again = analyze_levels(LevelNest.from_json(data, L1)).to_json()
    assert again["levels"] == data["levels"] and again["triggers"] == data["triggers"]
    sweep, png = tmp_path / "s.json", tmp_path / "s.png"
    assert main(["sweep-sram", layer, "--hardware", "blog-l1", "--level", "L1w", "--sizes", "1KiB,4KiB",
                 "--json", str(sweep), "--plot", str(png), "--quiet"]) == 0
    points = json.loads(sweep.read_text())["points"]
    assert [p["capacity_bytes"] for p in points] == [1024, 4096] and png.stat().st_size > 0
    for p in points:
        l1w = next(lv for lv in p["best"]["levels"] if lv["level"] == "L1w")
        assert l1w["capacity_bytes"] == p["capacity_bytes"] and l1w["peak_bytes"] <= p["capacity_bytes"]
        hw = with_level_capacity(L1, "L1w", p["capacity_bytes"])
        assert analyze_levels(LevelNest.from_json(p["best"], hw)).to_json()["levels"] == p["best"]["levels"]
