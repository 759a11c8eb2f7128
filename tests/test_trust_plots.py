"""Issue 26, part 6 (what a user meets): the figures inspected as matplotlib objects, not pixels. Every legend
lies outside the plotting areas (it covers no data), every text lies inside the figure (nothing clipped), a linear
cycles axis starts at zero, a Gantt chart has a row per engine that ran something, and the network chart colours
each kind of layer as its legend says."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
from matplotlib.colors import to_rgba

from dsasim import GlobalHierarchy, Schedule, Session, TensorCore, Workload, preset, run_schedule
from dsasim.architect.studies.network import Network, NetworkLayer
from dsasim.architect.studies.network_eval import LayerOutcome, NetworkResult
from dsasim.traced.segments import Segment
from dsasim.timing import simulate
from dsasim.view import plot


@pytest.fixture
def figures(monkeypatch):
    """The Figure objects the plot functions make (saving is skipped): list of figures, in call order."""
    made = []

    def keep(fig, path):
        fig.canvas.draw()  # lays out (constrained layout) so that extents are final
        made.append(fig)
        return Path(path)

    monkeypatch.setattr(plot, "_save", keep)
    return made


def _tiles(s: Session, x, w, y) -> None:
    tc = TensorCore(s)
    with GlobalHierarchy(s, "weights"):
        wt = w[:, :, :, :]
        for j in range(12):
            with GlobalHierarchy(s, "tile", buffers=2):
                cols = Segment(j * 4, (j + 1) * 4)
                yt = y[:, :, :, cols]
                yt += tc.conv2d(x[:, :, :, cols], wt)


@pytest.fixture(scope="module")
def timed():
    """A small conv run: loads, TensorCore, stores; the vector unit does nothing."""
    workload = Workload("tiles", inputs={"x": (1, 16, 1, 48), "w": (24, 16, 1, 1)}, outputs={"y": (1, 24, 1, 48)},
                        reference=lambda x, w: {"y": x})
    hw = preset("blog")
    return simulate(run_schedule(Schedule("tiles", workload, _tiles), hw, numeric=False).trace, hw)


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _legends(fig) -> list:
    return [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)


def check_legends_cover_no_data(fig) -> None:
    """Each legend's box is clear of every plotting area (axes patch) of the figure."""
    renderer = fig.canvas.get_renderer()
    legends = _legends(fig)
    assert legends, "the figure has no legend"
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            area = ax.get_window_extent(renderer)
            assert not _overlaps(box, area), f"legend {[t.get_text() for t in legend.get_texts()]} over an axes"


def check_text_inside_figure(fig) -> None:
    """Everything each axes draws (its titles, axis labels, tick labels, legend: its tight box) and the figure's
    legends lie inside the figure: nothing is clipped at its edge."""
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    boxes = [(ax.get_title() or ax.get_ylabel(), ax.get_tightbbox(renderer)) for ax in fig.axes]
    boxes += [("figure legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    for what, box in boxes:
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, \
            f"{what!r} is clipped: {box} outside {page}"


def test_timing_figures_keep_legends_off_the_data(timed, figures):
    # a user's hardware may have a long name: the default titles must still fit the figure
    long_name = dataclasses.replace(timed, hardware="my-accelerator-prototype-with-a-long-name")
    for result in (timed, long_name):
        plot.plot_bandwidth(result, "bw.png")
        plot.plot_sram(result, "sram.png")
        plot.plot_gantt(result, "gantt.png")
    for fig in figures:
        check_legends_cover_no_data(fig)
        check_text_inside_figure(fig)


def test_gantt_rows_are_the_engines_that_ran(timed, figures):
    ran = [e for e in timed.engines if timed.engine_operations[e] > 0]
    idle = [e for e in timed.engines if timed.engine_operations[e] == 0]
    assert "vector" in idle and {"dma-load", "dma-store", "tensorcore"} <= set(ran)  # (what the fixture is for)
    plot.plot_gantt(timed, "gantt.png")
    plot.plot_gantt(timed, "titled.png", "my title")
    for fig in figures:
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.get_yticklabels()] == list(reversed(ran))  # top row first
        assert "idle, not drawn: vector" in ax.get_title()  # an idle engine is named, not drawn as an empty row
    assert figures[1].axes[0].get_title().startswith("my title")


def _sweep_point(kib: int, traffic: int, cycles: int) -> SimpleNamespace:
    return SimpleNamespace(sram_bytes=kib * 1024, traffic_bytes=traffic, lower_bound_bytes=traffic // 2,
                           compulsory_bytes=traffic // 3, cycles=cycles, cycles_source="simulated")


def test_sweep_cycles_axis_starts_at_zero(figures):
    # cycles 13.0 M .. 14.0 M: an axis from its data's minimum would make a 7 % change fill the whole height
    result = SimpleNamespace(spec="conv", hardware=SimpleNamespace(name="blog"), choices=[
        _sweep_point(64, 5_000_000, 14_000_000), _sweep_point(128, 4_000_000, 13_500_000),
        _sweep_point(256, 3_000_000, 13_000_000)])
    plot.plot_sweep(result, "sweep.png")
    row = [SimpleNamespace(sram_bytes=p.sram_bytes, traffic_bytes=p.traffic_bytes, cycles=p.cycles,
                           lower_bound_bytes=p.lower_bound_bytes, compulsory_bytes=p.compulsory_bytes,
                           hardware=SimpleNamespace(name=name)) for p in result.choices for name in ("blog",)]
    plot.plot_network_sweep(SimpleNamespace(network=SimpleNamespace(name="net"), results=[row, row]), "net.png")
    for fig in figures:
        ax, ax2 = fig.axes[0], fig.axes[1]
        assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()  # traffic: log, and it says so
        assert ax2.get_yscale() == "linear" and ax2.get_ylim()[0] == 0  # cycles: linear, from zero
        assert ax2.get_ylim()[1] >= 14_000_000
        check_legends_cover_no_data(fig)
        check_text_inside_figure(fig)


def _layer(name: str, kind: str, op: str, traffic: int) -> LayerOutcome:
    return LayerOutcome(layer=NetworkLayer(name=name, op=op, kind=kind, shape="-"), status="ok",
                        loaded_bytes=traffic, cycles=traffic // 10, lower_bound_bytes=traffic // 2)


def test_network_chart_colours_each_kind_as_its_legend_says(figures):
    layers = (_layer("conv1", "tensorcore", "conv2d", 1_000_000),
              _layer("maxpool", "vector", "max_pool2d", 900_000),
              _layer("layer1.0.conv1+layer1.0.conv2+layer1.0.conv3", "chain", "chain [1 2 3]", 800_000),
              _layer("layer2.0.conv1+layer2.0.conv2", "chain", "chain [1] [2]", 700_000),
              LayerOutcome(layer=NetworkLayer(name="odd", op="roll", kind="unmodelled", shape="-"),
                           status="unmodelled"))
    result = NetworkResult(network=Network(name="net", input_shape=(1, 3, 8, 8), layers=()),
                           hardware=preset("blog"), sram_bytes=256 * 1024, layers=layers)
    plot.plot_network(result, "net.png")
    fig = figures[0]
    top, bottom = fig.axes
    expected = ["tensorcore", "vector", "fused chain", "split chain"]  # by hand, per layer above
    for ax in (top, bottom):
        bars = [p for p in ax.patches]
        assert len(bars) == 4
        assert [p.get_facecolor() for p in bars] == [to_rgba(plot.NETWORK_BAR_KINDS[k][0]) for k in expected]
    # the legend names each kind drawn, in its colour; a fused chain is not called a vector layer
    legend = top.get_legend()
    named = {t.get_text(): to_rgba(h.get_facecolor()) for t, h in zip(legend.get_texts(), legend.legend_handles)
             if t.get_text() != "lower bound (traffic)"}
    assert named == {plot.NETWORK_BAR_KINDS[k][1]: to_rgba(plot.NETWORK_BAR_KINDS[k][0]) for k in expected}
    assert len({to_rgba(c) for c, _ in plot.NETWORK_BAR_KINDS.values()}) == len(plot.NETWORK_BAR_KINDS)
    assert "layer1.0.conv1+conv2+conv3" in [t.get_text() for t in bottom.get_xticklabels()]  # the repeated prefix
    assert all(t.get_fontsize() >= 7 for t in bottom.get_xticklabels())
    assert "SRAM 256 KiB" in top.get_title() and "left out: odd" in top.get_title()
    check_legends_cover_no_data(fig)
    check_text_inside_figure(fig)
    # an attention group fused into one entry (an LLM or BERT layer preset) has its own colour
    assert plot._bar_kind(NetworkLayer(name="sdpa", op="attention [fused]", kind="attention", shape="-")) == \
        "attention"
    # a few layers (the narrowest chart) of a network and hardware with long names: the title still fits
    few = dataclasses.replace(result, network=Network(name="my_models.vision:TinyNet", input_shape=(1, 3, 8, 8),
                                                      layers=()),
                              hardware=dataclasses.replace(preset("blog"), name="prototype-accelerator-v2"),
                              layers=layers[:2] + layers[4:])
    plot.plot_network(few, "few.png")
    check_text_inside_figure(figures[1])


def test_a_layer_kind_without_a_colour_is_refused():
    with pytest.raises(ValueError, match="no bar colour for kind 'mystery'"):
        plot._bar_kind(NetworkLayer(name="x", op="?", kind="mystery", shape="-"))


def test_shapes_cycles_axis_starts_at_zero(figures):
    # cycles 400 .. 440 over three shapes: from zero, not from 400
    points = [SimpleNamespace(value=v, cycles=c, reference=c, tensorcore_utilization=u)
              for v, c, u in ((1, 400, 0.5), (2, 420, 0.6), (3, 440, 0.7))]
    sweep = SimpleNamespace(points=points, problem=SimpleNamespace(name="gemm"), dim="m", sram_bytes=256 * 1024,
                            hardware=SimpleNamespace(name="blog"), dispatch=[(1, 3, 0)], max_loss=0.05, single=0,
                            cost=[[400, 420, 440]], dispatched=lambda i: 0, objective="cycles")
    plot.plot_shapes(sweep, "shapes.png")
    fig = figures[0]
    top, bottom = fig.axes
    assert bottom.get_ylim()[0] == 0 and bottom.get_ylim()[1] >= 440
    assert "SRAM 256 KiB" in top.get_title()
    check_legends_cover_no_data(fig)
    check_text_inside_figure(fig)
