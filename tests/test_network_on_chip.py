"""Results kept on chip between layers (`network_on_chip.plan_on_chip`, `Session.keep_on_chip`, `simulate_network(
..., keep_on_chip=True)`, `dsasim network --simulate --keep-on-chip`).

The two-layer network and the hardware "tiny" are test_network_simulation's (1-byte words, DDR 1 B/cycle without
setup, separate load and store ports, 4 KiB SRAM): l1: c1[2x4] = a1[2x16] @ w1[16x4], l2: c2[2x4] = c1 @ w2[4x4],
each loop m with tile 1, w staged at the top, a and c per row.
"""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

from dsasim.architect.studies.network_on_chip import OnChipPlan, plan_on_chip
from dsasim.architect.studies.network_simulation import NetworkTraceMismatch, simulate_network, time_network_trace
from dsasim.architect.studies.network_trace import trace_network
from dsasim.cli.common import import_kernel
from test_network_simulation import _NET, L1, L2, TINY, _matmul, _ops, _result


def _result_at(sram_bytes: int, *entries):
    result = _result(*entries)
    return replace(result, hardware=replace(TINY, sram_bytes=sram_bytes), sram_bytes=sram_bytes)


def test_two_layers_with_the_result_kept_by_hand():
    """c1 (8 B) is read by l2 only, with its own shape: it is kept, at the top of the SRAM (4096 - 8 = 4088).
    Saved: l1's two 4-B stores of c1 and l2's two 4-B loads of it. Every operation, by hand (model.pyx's rules):
      open  c1 (kept)   0           its OPEN: no engine, no time
      load  w1          [0, 64)
      load  a1[0]       [64, 80)
      tc    c1[0]       [80, 81)    writes into the kept buffer (a hit: no buffer of its own)
      load  a1[1]       [81, 97)    slot: a1[0]'s bytes, free once tc c1[0] ends at 81
      tc    c1[1]       [97, 98)
      load  w2          [98, 114)   w1's bytes, free once tc c1[1] ends at 98
      tc    c2[0]       [114, 115)  after w2; it reads the kept buffer: after its last write (tc c1[1], 98)
      store c2[0]       [115, 119)
      tc    c2[1]       [119, 120)  c2[1]'s OPEN takes c2[0]'s bytes (the m scope is 1-way): after its store, 119
      store c2[1]       [120, 124)  the end: 124 cycles, 4 fewer than with c1 through DDR (128: its loads gone)"""
    result = _result(L1, L2)
    s = simulate_network(result, import_kernel, keep_on_chip=True)
    plan = s.on_chip.plan
    (kept,) = plan.kept
    assert (kept.name, kept.nbytes, kept.address, kept.producer, kept.readers) == ("l1", 8, 4088, "l1", ("l2",))
    assert (kept.saved_loaded_bytes, kept.saved_stored_bytes) == (8, 8)
    assert [(n.name, n.reason) for n in plan.not_kept] == [("l2", "output")]
    sim = s.sim
    assert _ops(sim, "l1", "load") == [] and _ops(sim, "l1", "store") == []
    assert [(a, b) for _, a, b in _ops(sim, "l1:a", "load")] == [(64, 80), (81, 97)]
    assert [(a, b) for _, a, b in _ops(sim, "l1", "tensorcore")] == [(80, 81), (97, 98)]
    assert [(a, b) for _, a, b in _ops(sim, "l2:b", "load")] == [(98, 114)]
    assert [(a, b) for _, a, b in _ops(sim, "l2", "tensorcore")] == [(114, 115), (119, 120)]
    assert [(a, b) for _, a, b in _ops(sim, "l2", "store")] == [(115, 119), (120, 124)]
    assert s.cycles == 124 and s.on_chip.ddr_cycles == 128
    first, second = s.entries
    # model == trace less the kept bytes: l1 96 / 8 - 0 / 8, l2 24 / 8 - 8 / 0
    assert (first.loaded_bytes, first.stored_bytes, second.loaded_bytes, second.stored_bytes) == (96, 0, 16, 8)
    assert (first.kept_bytes, second.kept_bytes) == ((0, 8), (8, 0))
    data = s.to_json()["on_chip"]
    assert (data["cycles"], data["cycles_through_ddr"]) == (124, 128)
    assert (data["loaded_bytes_through_ddr"], data["stored_bytes_through_ddr"]) == (120, 16)
    assert (data["saved_loaded_bytes"], data["saved_stored_bytes"]) == (8, 8)
    assert json.dumps(s.to_json()) == json.dumps(simulate_network(result, import_kernel, keep_on_chip=True).to_json())


@pytest.mark.parametrize("sram_bytes, kept", [(91, False), (92, True)])
def test_kept_only_where_it_fits_beside_each_entrys_buffers(sram_bytes, kept):
    """Rule (fit): l1's own buffers peak at w1 64 + a1[0] 16 + c1[0] 4 = 84 B (l2's: w2 16 + c1[0] 4 + c2[0] 4 =
    24). Kept at the top, c1 takes [sram - 8, sram): it fits when 84 <= sram - 8, i.e. from 92 B on."""
    s = simulate_network(_result_at(sram_bytes, L1, L2), import_kernel, keep_on_chip=True)
    assert s.entries[0].loaded_bytes == 96  # (the trace through DDR measured l1's peak: checked here as the rule's)
    plan = s.on_chip.plan
    assert bool(plan.kept) is kept
    if kept:
        assert plan.kept[0].address == 84
    else:
        (n, _) = plan.not_kept
        assert (n.name, n.reason) == ("l1", "no-fit")
        assert "l1 needs 84 B of its own while it is held; the results kept then leave 83 B" in n.detail
        assert s.cycles == s.on_chip.ddr_cycles  # nothing kept: the same trace


def test_a_result_read_through_a_copy_stays_in_ddr():
    """Rule (shared readers only): l2 reads c1 as a (1 x 8) matrix (a flatten: a fenced copy), so c1 must be in
    DDR; the reason names the reader."""
    l2 = _matmul("l2", 1, 4, 8, ("l1",), loaded=8 + 32, stored=4)
    s = simulate_network(_result(L1, l2), import_kernel, keep_on_chip=True)
    assert not s.on_chip.plan.kept
    copy = next(n for n in s.on_chip.plan.not_kept if n.name == "l1")
    assert copy.reason == "copy" and copy.detail.startswith("l2 reads a copy of it")


def _span(name, peak, results=(), moved=()):
    return SimpleNamespace(name=name, peak_sram_bytes=peak, results=results, result_bytes=moved)


def test_places_first_fit_from_the_top_and_reuses_a_place_once_free():
    """Rule (lifetime): A (30 B, entries 0-1), B (30 B, 1-2), C (30 B, 2-3) in an SRAM of 100 B. A takes the top,
    [70, 100); B is live with A (entry 1): just below it, [40, 70); C is live with B only (A's last reader, entry
    1, has run): the top again, [70, 100). Savings: each result's store by its producer and load by its reader."""
    spans = [_span("e0", 10, (("A", 30),), (("A", 0, 30),)),
             _span("e1", 10, (("B", 30),), (("A", 30, 0), ("B", 0, 30))),
             _span("e2", 40, (("C", 30),), (("B", 30, 0), ("C", 0, 30))),
             _span("e3", 10, (), (("C", 30, 0),))]
    plan = plan_on_chip(SimpleNamespace(spans=spans, copied={}), 100)
    assert [(k.name, k.address, k.readers) for k in plan.kept] == [("A", 70, ("e1",)), ("B", 40, ("e2",)),
                                                                    ("C", 70, ("e3",))]
    assert plan.saved_by_entry == (("e0", 0, 30), ("e1", 30, 30), ("e2", 30, 30), ("e3", 30, 0))
    # e2's own 40 B and B at 40: fits exactly; at 41 B it would not, and B goes through DDR (C then fits at the top)
    spans[2] = _span("e2", 41, (("C", 30),), (("B", 30, 0), ("C", 0, 30)))
    plan = plan_on_chip(SimpleNamespace(spans=spans, copied={}), 100)
    assert [(k.name, k.address) for k in plan.kept] == [("A", 70), ("C", 70)]
    assert [(n.name, n.reason) for n in plan.not_kept] == [("B", "no-fit")]


def test_nothing_is_kept_on_levels():
    spans = [_span("e0", 10, (("A", 30),), (("A", 0, 30),)), _span("e1", 10, (), (("A", 30, 0),))]
    plan = plan_on_chip(SimpleNamespace(spans=spans, copied={}), 100, levels=True)
    assert plan == OnChipPlan((), plan.not_kept, ()) and plan.not_kept[0].reason == "levels"


def test_a_trace_that_moves_other_bytes_than_the_plan_says_fails_loudly():
    """The check with a plan: l2's trace must move 24 - 8 B; a plan that claims l2 saved nothing (its loads of c1
    gone, the claim not) is named."""
    result = _result(L1, L2)
    plan = plan_on_chip(trace_network(result, import_kernel), result.sram_bytes)
    wrong = replace(plan, saved_by_entry=(("l1", 0, 8),))
    with pytest.raises(NetworkTraceMismatch, match=r"l2: traced 16 B loaded"):
        time_network_trace(trace_network(result, import_kernel, wrong), result)


def test_session_keep_on_chip_refusals():
    from dsasim import GlobalHierarchy
    from dsasim.errors import SramOverflowError, UnfinishedError
    from dsasim.traced.session import Session

    s = Session(TINY, numeric=False)
    x, mid = s.input("x", (4, 4)), s.on_chip("mid", (4, 4))
    with pytest.raises(ValueError, match="on-chip tensor"):
        s.keep_on_chip(x, 0)
    with pytest.raises(SramOverflowError, match="end of the SRAM"):
        s.keep_on_chip(mid, 4096 - 8)
    tile = s.keep_on_chip(mid, 4096 - 16)
    with pytest.raises(SramOverflowError, match="another kept buffer"):
        s.keep_on_chip(s.on_chip("other", (2, 4)), 4096 - 20)
    with GlobalHierarchy(s, "p"):
        assert mid[0:2, :].buffer is tile.buffer  # a hit
        with pytest.raises(SramOverflowError):  # the scopes stay below the kept bytes: 16 + 4,065 > 4,080
            x[0:4, 0:4], s.scratch("big", (4065,))
    with pytest.raises(UnfinishedError, match="never released"):
        s.finish()


# ------------------------------------------------------------------------------------------------ the command
def test_network_keep_on_chip_command(tmp_path, monkeypatch, capsys):
    """`--keep-on-chip`: a column per entry (its result kept, or why not, and the bytes saved), the summary, and
    the JSON's on_chip, whose saved bytes are each layer's through-DDR bytes less its traced ones."""
    from dsasim.cli import main

    (tmp_path / "keepnets.py").write_text(_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    js = tmp_path / "k.json"
    assert main(["network", "keepnets:Mlp", "--simulate", "--keep-on-chip", "--no-fusion", "--json", str(js),
                 "--quiet", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "results kept on chip: 1 of 2" in out and "with every result through DDR" in out
    data = json.loads(js.read_text())
    sim = data["simulation"]
    (kept,) = sim["on_chip"]["kept"]
    # a's result (2 x 24 words of blog's 1 B = 48 B) is read by b only: its store and b's loads of it are saved
    assert (kept["name"], kept["bytes"], kept["readers"]) == ("a", 2 * 24, ["b"])
    for layer, searched in zip(sim["layers"], data["layers"]):
        assert layer["loaded_bytes"] + layer["on_chip_saved_loaded_bytes"] == searched["loaded_bytes"]
        assert layer["stored_bytes"] + layer["on_chip_saved_stored_bytes"] == searched["stored_bytes"]
    assert sim["on_chip"]["saved_stored_bytes"] == 48  # stored once


@pytest.mark.parametrize("argv, message", [
    (["network", "resnet18", "--keep-on-chip"], "--keep-on-chip needs --simulate"),
    (["network", "resnet18", "--simulate", "--keep-on-chip", "--hardware", "blog-l1"],
     "levels below the SRAM"),
])
def test_keep_on_chip_refusals(argv, message, capsys):
    from dsasim.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------- sliding and strided readers
def _conv(name, reads, nest_args, **problem):
    """A conv entry whose figures are the analytic model's (independent of the trace) for its LoopNest."""
    from dsasim.architect.model.analytic import analyze
    from dsasim.architect.nests.loopnest import ConvProblem, LoopNest
    from dsasim.architect.studies.network import TENSORCORE, NetworkLayer
    from dsasim.architect.studies.network_eval import LayerOutcome

    p = ConvProblem(name=name, **problem)
    nest = LoopNest(p, *nest_args[:1], **nest_args[1])
    a = analyze(nest, TINY)
    layer = NetworkLayer(name=name, op="conv", kind=TENSORCORE, shape=p.spec(), problem=p, reads=reads,
                         out_shape=p.shape("output"))
    image = next(t for t in a.tensors if t.name == "image")
    return LayerOutcome(layer=layer, status="ok", loaded_bytes=a.loaded_bytes, stored_bytes=a.stored_bytes,
                        cycles=1, schedule=nest.to_json()), image.loaded_bytes


def test_sliding_and_strided_readers_read_a_kept_result_in_place():
    """Rule (readers in place): c1 (1x1, 4 -> 4 channels, 6x6) is read by c2, a 3x3 conv whose image slides along
    oh (a rotating buffer: it would read a fenced copy), and by c3, a 1x1 stride-2 conv (strided boxes: a copy
    too). Both can read it where it is, so it is kept; what it saves is c1's store (4 x 6 x 6 = 144 B) and each
    reader's image loads as the analytic model counts them (an independent computation)."""
    top = {"stage": {"image": "top", "weight": "top", "output": "top"}}
    c1, _ = _conv("c1", ("",), (("n", "oc", "oh", "ow", "ic", "kh", "kw"), top), n=1, ic=4, oc=4, h=6, w=6, kh=1)
    c2, c2_image = _conv("c2", ("c1",), (("n", "oc", "oh", "ow", "ic", "kh", "kw"),
                                         {"tiles": {"oh": 1}, "stage": {"image": "oh", "weight": "top",
                                                                        "output": "oh"}, "slide": ("image",)}),
                         n=1, ic=4, oc=4, h=6, w=6, kh=3)
    c3, c3_image = _conv("c3", ("c1",), (("n", "oc", "oh", "ow", "ic", "kh", "kw"), top), n=1, ic=4, oc=4, h=6,
                         w=6, kh=1, stride=2)
    result = _result(c1, c2, c3)
    s = simulate_network(result, import_kernel, keep_on_chip=True)
    (kept,) = s.on_chip.plan.kept
    assert (kept.name, kept.readers, kept.nbytes) == ("c1", ("c2", "c3"), 144)
    assert kept.saved_stored_bytes == 144 and kept.saved_loaded_bytes == c2_image + c3_image
    e1, e2, e3 = s.entries
    assert e2.loaded_bytes == c2.loaded_bytes - c2_image and e3.loaded_bytes == c3.loaded_bytes - c3_image
    assert e1.stored_bytes == 0 and s.fence_bytes == 0  # no copy, so no fence
    # c2's slides and c3's strided boxes are hits in the kept buffer: c1's one OPEN is the kept buffer's (a rotating
    # buffer of c2's own would open more, of zeros, with no wait for c1's computes)
    assert [region for region, _, _ in _ops(s.sim, "c1", "open")] == [((0, 1), (0, 4), (0, 6), (0, 6))]
    # a reader of a kept result computes after its producer's last write of it (the buffer's RAW rule): a
    # rotating buffer of its own would open zeros and start before c1 has computed anything
    c1_last = max(r.end for r in s.sim.records() if r.kind == "tensorcore" and r.tensor == "c1")
    for reader in ("c2", "c3"):
        assert min(r.start for r in s.sim.records() if r.kind == "tensorcore" and r.tensor == reader) >= c1_last
    through = simulate_network(result, import_kernel)
    assert through.fence_bytes == 2  # the copies' fences (one word each) in the trace through DDR


# ------------------------------------------------------------------------------- the sweep and the page
def _on_chip(kept: int, not_kept: int, loaded: int, stored: int, through: int) -> dict:
    """An 'on_chip' object as NetworkSimulation.to_json writes it (hand-chosen figures)."""
    return {"kept": [{"name": f"k{i}"} for i in range(kept)],
            "not_kept": [{"name": f"n{i}", "reason": "no-fit" if i else "output"} for i in range(not_kept)],
            "saved_loaded_bytes": loaded, "saved_stored_bytes": stored, "cycles_through_ddr": through}


def test_the_simulated_sizes_table_and_page_say_what_keeping_saved():
    """Per size, with --keep-on-chip: kept of all, the DDR bytes saved (loaded + stored) and the cycles through
    DDR; the page's simulation section says it in words (1 of 3 kept, 40 + 24 = 64 B saved, no-fit 1, output 1)."""
    from dsasim.view.html_page import HtmlPage
    from dsasim.view.html_report import add_network_simulation
    from dsasim.view.simulated_sizes import simulated_sizes_table
    from test_html_report import SIMULATED_SWEEP

    sweep = json.loads(json.dumps(SIMULATED_SWEEP))
    sweep["simulation"][1]["on_chip"] = _on_chip(1, 2, 40, 24, 230)
    sweep["simulation"][2]["on_chip"] = _on_chip(2, 1, 100, 60, 170)
    header, rows = simulated_sizes_table(sweep)
    assert header[6:] == ("kept", "saved B", "through DDR", "not simulated because")
    assert rows[1][6:9] == ("1/3", 64, 230) and rows[2][6:9] == ("2/3", 160, 170)
    assert rows[0][6:9] == (None, None, None)  # not simulated
    page = HtmlPage("kept")
    add_network_simulation(page, sweep["simulation"][1])
    html = page.html()
    assert "1 of 3, saving 64 B of DDR traffic; 230 cycles with every result through DDR" in html
    assert "no-fit 1, output 1" in html


def test_sweep_sram_keeps_results_on_chip_at_each_size(tmp_path, capsys):
    """`sweep-sram --network ... --simulate-network --keep-on-chip`: each size's simulation has its plan; the
    printed table has the kept columns; the saved bytes are each size's through-DDR bytes less its traced ones."""
    from dsasim.cli import main

    js = tmp_path / "s.json"
    assert main(["sweep-sram", "--network", "examples/network_levels.py:TwoLinear", "--sizes", "4KiB,64KiB",
                 "--simulate-network", "--keep-on-chip", "--json", str(js), "--quiet", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "kept" in out and "saved B" in out and "through DDR" in out
    sims = json.loads(js.read_text())["simulation"]
    # at 4 KiB the first layer's own buffers leave no room for its result; at 64 KiB it is kept, stored and read
    # once: its store and its one load saved
    assert [len(sim["on_chip"]["kept"]) for sim in sims] == [0, 1]
    assert sims[0]["on_chip"]["not_kept"][0]["reason"] == "no-fit"
    (kept,) = sims[1]["on_chip"]["kept"]
    assert kept["saved_stored_bytes"] == kept["saved_loaded_bytes"] == kept["bytes"]
    for sim in sims:
        plan = sim["on_chip"]
        assert plan["loaded_bytes_through_ddr"] - plan["saved_loaded_bytes"] == sim["loaded_bytes"]
        assert plan["stored_bytes_through_ddr"] - plan["saved_stored_bytes"] == sim["stored_bytes"]


@pytest.mark.parametrize("extra, message", [
    ([], "--keep-on-chip keeps results on chip in each size's simulation: add --simulate-network"),
    (["--simulate-network", "--hardware", "blog-l1"], "levels below the SRAM"),
])
def test_sweep_keep_on_chip_refusals(extra, message, capsys):
    from dsasim.cli import main

    assert main(["sweep-sram", "--network", "resnet18", "--sizes", "64KiB", "--keep-on-chip", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
