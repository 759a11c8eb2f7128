"""`--html PATH` reports (dsasim.view.html_page, dsasim.view.html_report): every string escaped, the same bytes for
the same inputs, written whole or not at all, the path checked before any work; and each kind of report opened in
headless Chromium (tests/chromium_page.py): no console error, nothing loaded from elsewhere, the headline figure
(read from the command's own --json) on the page, a screenshot.

The screenshots in docs/img/ are these tests' own: `DSASIM_WRITE_SCREENSHOTS=1 pytest tests/test_html_report.py`
writes them there (otherwise into a temporary folder).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from chromium_page import chromium_missing, open_page
from dsasim.cli import main
from dsasim.view.html_page import HtmlPage, figure_svg
from dsasim.view.html_report import add_network_simulation, add_simulated_sizes

HOSTILE = "<script>alert(\"x\")</script> & 'q'"
# HOSTILE escaped by hand: < > & " ' as character references
HOSTILE_ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27;"
DOCS_IMG = Path(__file__).resolve().parent.parent / "docs" / "img"
needs_chromium = pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")


def _screenshot_path(tmp_path: Path, name: str) -> Path:
    """docs/img/NAME when DSASIM_WRITE_SCREENSHOTS=1 (the docs' pictures), else a temporary file."""
    if os.environ.get("DSASIM_WRITE_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(exist_ok=True)
        return DOCS_IMG / name
    return tmp_path / name


def _check_in_browser(html: Path, shot: Path, *expected: str, height: int = 1600) -> str:
    """Open `html` in Chromium: no console error, no request but the file itself, each of `expected` in its text;
    a PNG screenshot of the top `height` pixels at `shot`. The page's text."""
    page = open_page(html, screenshot=shot, height=height)
    assert page.errors == ()
    assert page.requests == (html.resolve().as_uri(),)  # self-contained: nothing fetched, not even a favicon
    for text in expected:
        assert text in page.text, f"{text!r} is not on the page"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return page.text


# ------------------------------------------------------------------------------------------------ the page itself
def test_every_string_put_into_the_page_is_escaped() -> None:
    page = HtmlPage(HOSTILE, HOSTILE)
    page.section(HOSTILE)
    page.paragraph(HOSTILE)
    page.paragraph(HOSTILE, warning=True)
    page.bullets([HOSTILE])
    page.facts([(HOSTILE, HOSTILE)])
    page.table([HOSTILE, "n", "note"], [[HOSTILE, 1234, HOSTILE]])  # a name (left-aligned) and a number column
    page.preformatted(HOSTILE, summary=HOSTILE)
    html = page.html()
    assert "<script" not in html and "alert(\"x\")" not in html
    # title, h1, subtitle, h2, 2 paragraphs, 1 bullet, fact label and value, table header and 2 cells, pre, summary
    assert html.count(HOSTILE_ESCAPED) == 14
    assert '<td class="num">1,234</td>' in html  # a count: right-aligned, thousands separators


def test_a_figure_is_the_same_bytes_whatever_the_date_and_ids_never_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    from dsasim.view.plot import _figure

    def figure() -> Any:
        fig = _figure(4.0, 3.0)
        ax = fig.add_subplot()
        ax.plot([1, 2, 3], [3, 1, 2], "o-", label=HOSTILE)
        ax.legend()
        ax.set_title(HOSTILE)
        return fig

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # matplotlib dates its SVG metadata by this when set
    first = figure_svg(figure(), "a")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert figure_svg(figure(), "a") == first  # no date, no random id: byte-identical
    assert first.startswith("<svg") and "<?xml" not in first and "<!DOCTYPE" not in first
    assert "<script" not in first  # matplotlib escapes the text it draws
    second = figure_svg(figure(), "b")
    ids = [set(re.findall(r'\sid="([^"]+)"', svg)) for svg in (first, second)]
    assert ids[0] and not ids[0] & ids[1]  # two figures on one page share no id
    for svg, own in zip((first, second), ids):
        references = set(re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', svg))
        assert {r for pair in references for r in pair if r} <= own  # every reference is to the figure's own id


def test_a_page_is_written_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half-way (a full disk) leaves the earlier report as it was, and no temporary file."""
    out = tmp_path / "report.html"
    out.write_text("the earlier report")
    page = HtmlPage("a page")
    page.paragraph("x" * 10_000)

    def half_then_full(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        with open(self, "w", encoding="utf-8") as f:
            f.write(text[:len(text) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        page.write(out)
    monkeypatch.undo()
    assert out.read_text() == "the earlier report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


# a network simulation as netsim's result writes it (the shape of NETWORK_SIMULATION_KEYS): layer a from cycle 0 to
# 100, layer b from 80 to 200 (it starts while a still computes: 20 cycles of overlap); windows of 50 cycles
NETWORK_SIMULATION = {
    "cycles": 200, "window_cycles": 50, "dram_bytes_per_cycle": 32.0, "sram_bytes": 65536,
    "layers": [{"name": "a", "start_cycle": 0, "end_cycle": 100, "estimated_cycles": 90},
               {"name": HOSTILE, "start_cycle": 80, "end_cycle": 200, "estimated_cycles": 100}],
    "ddr_load_bytes": [1600, 800, 400, 0], "ddr_store_bytes": [0, 0, 100, 300],
    "sram_occupancy_bytes": [4096, 8192, 6144, 2048],
    "stall_cycles": {"load:weight": 30, "load:image": 12},
}


def _simulation_page() -> HtmlPage:
    page = HtmlPage("a network, simulated")
    add_network_simulation(page, NETWORK_SIMULATION)
    return page


def test_a_network_simulation_section_from_its_json() -> None:
    html = _simulation_page().html()
    # simulated 200 cycles against the analytic 90 + 100 = 190: 200 / 190 = 1.0526 -> 1.053; the layers' spans
    # 100 + 120 = 220 summed, 220 - 200 = 20 cycles overlap; layer b: 120 simulated / 100 analytic = 1.200
    assert "190 cycles; simulated / estimate 1.053" in html
    assert "20 cycles (the layers&#x27; own spans summed: 220)" in html
    assert '<td class="num">80</td><td class="num">200</td><td class="num">120</td><td class="num">100</td>' \
           '<td class="num">1.200</td>' in html
    assert "load:weight 30, load:image 12" in html  # stalls, the longest first
    assert HOSTILE_ESCAPED in html and "<script" not in html
    assert html.count("<svg") == 1


def test_a_network_simulation_without_a_key_is_refused_by_name() -> None:
    broken = {**NETWORK_SIMULATION, "layers": [{"name": "a", "end_cycle": 5}]}
    with pytest.raises(ValueError, match="layer 0 of the network simulation has no 'start_cycle'"):
        add_network_simulation(HtmlPage("x"), broken)
    with pytest.raises(ValueError, match="has no 'window_cycles'.*layers"):
        add_network_simulation(HtmlPage("x"), {k: v for k, v in NETWORK_SIMULATION.items() if k != "window_cycles"})



# a network sweep simulated at three sizes, as `sweep-sram --simulate-network --json` writes it (hand-chosen
# figures): 1 KiB not simulated (the reason; its estimate is its point's 5,000 cycles); 4 KiB is NETWORK_SIMULATION
# (200 cycles against 90 + 100 = 190 estimated, overlap 20, peak 8,192 B); 16 KiB: layer a from 0 to 60, b from 50 to
# 150 (150 cycles; spans 60 + 100 = 160: overlap 10; the same estimate 190), peak 12,288 B
NOT_SIMULATED = f"cannot simulate net: layer(s) left out of the totals ({HOSTILE}); only a whole network is traced"
SIMULATED_SWEEP = {
    "network": "net",
    "points": [{"sram_bytes": 1024, "cycles": 5000}, {"sram_bytes": 4096, "cycles": 190},
               {"sram_bytes": 16384, "cycles": 190}],
    "simulation": [
        {"sram_bytes": 1024, "not_simulated": NOT_SIMULATED},
        {**NETWORK_SIMULATION, "sram_bytes": 4096, "estimated_cycles": 190, "overlap_cycles": 20,
         "peak_sram_bytes": 8192, "a key the page does not know": {"a": 1}},
        {**NETWORK_SIMULATION, "sram_bytes": 16384, "cycles": 150, "estimated_cycles": 190, "overlap_cycles": 10,
         "peak_sram_bytes": 12288, "sram_occupancy_bytes": [4096, 8192, 2048], "ddr_load_bytes": [1600, 800, 400],
         "ddr_store_bytes": [0, 0, 100],
         "layers": [{"name": "a", "start_cycle": 0, "end_cycle": 60, "estimated_cycles": 90},
                    {"name": "b", "start_cycle": 50, "end_cycle": 150, "estimated_cycles": 100}]}],
}


def _num_cells(*values: str) -> str:
    return "".join(f'<td class="num">{v}</td>' for v in values)


def _simulated_sizes_page() -> HtmlPage:
    page = HtmlPage("a network sweep, simulated")
    add_simulated_sizes(page, SIMULATED_SWEEP)
    return page


def test_a_sweep_simulated_at_each_size_from_its_json() -> None:
    html = _simulated_sizes_page().html()
    # per size: SRAM B, estimate, simulated, ratio, overlap, peak SRAM B, why not simulated (left-aligned text).
    # 1 KiB: its point's estimate, no simulated figure, the reason; 4 KiB: 200 / 190 = 1.0526 -> 1.053;
    # 16 KiB: 150 / 190 = 0.7895 -> 0.789
    assert _num_cells("1,024", "5,000", "-", "-", "-", "-") + f"<td>{NOT_SIMULATED.replace(HOSTILE, HOSTILE_ESCAPED)}" \
           "</td>" in html
    assert _num_cells("4,096", "190", "200", "1.053", "20", "8,192") + "<td>-</td>" in html
    assert _num_cells("16,384", "190", "150", "0.789", "10", "12,288") + "<td>-</td>" in html
    assert "<th>not simulated because</th>" in html and "A size not simulated says why." in html
    # each simulated size's own timeline section, headed by its size (10 cycles of overlap: 160 - 150), and none
    # for the size not simulated
    assert "<h2>Simulated at 4 KiB: the network in one timeline</h2>" in html
    assert "<h2>Simulated at 16 KiB: the network in one timeline</h2>" in html
    assert "Simulated at 1 KiB" not in html
    assert "10 cycles (the layers&#x27; own spans summed: 160)" in html
    assert html.count("<svg") == 3  # the sizes' figure and two timelines
    assert "<script" not in html


def test_the_simulated_sizes_figure_holds_the_table_s_numbers() -> None:
    from dsasim.view.plot import network_sweep_simulation_figure

    fig = network_sweep_simulation_figure("net", [1024, 4096, 16384], [5000, 190, 190], [None, 200, 150])
    ax = fig.axes[0]
    estimate, simulated, missing = ax.get_lines()
    assert list(estimate.get_xdata()) == [1, 4, 16] and list(estimate.get_ydata()) == [5000, 190, 190]  # KiB
    assert [None if y != y else y for y in simulated.get_ydata()] == [None, 200, 150]  # NaN: a break in the line
    assert list(missing.get_xdata()) == [1] and "not simulated (1 of 3 sizes)" in missing.get_label()
    assert ax.get_ylim()[0] == 0  # a linear cycles axis from zero
    from test_trust_plots import check_legends_cover_no_data, check_text_inside_figure

    # a network named by a long path (FILE.py:ATTR) still fits: the title is not clipped, the legend is off the data
    long_name = "/home/someone/projects/accelerator-study/models/my_network_variant.py:MyNetworkVariant"
    for figure in (fig, network_sweep_simulation_figure(long_name, [1024, 4096], [5000, 190], [4000, 200])):
        figure.canvas.draw()
        check_legends_cover_no_data(figure)
        check_text_inside_figure(figure)
    with pytest.raises(ValueError, match="3 sizes, 2 estimates"):
        network_sweep_simulation_figure("net", [1, 2, 3], [1, 2], [1, 2, 3])


def test_the_command_prints_the_page_s_rows() -> None:
    from dsasim.cli.sweep import format_simulated_sizes

    # the rows of test_a_sweep_simulated_at_each_size_from_its_json, as text (written out by hand)
    assert format_simulated_sizes({**SIMULATED_SWEEP, "simulation": [
        {"sram_bytes": 1024, "not_simulated": "a layer is unplaceable"}, *SIMULATED_SWEEP["simulation"][1:]]}) == (
        "\nsimulated in one timeline per size:\n"
        "SRAM B  estimate  simulated  ratio  overlap  peak SRAM B  not simulated because\n"
        "------  --------  ---------  -----  -------  -----------  ----------------------\n"
        " 1,024     5,000          -      -        -            -  a layer is unplaceable\n"
        " 4,096       190        200  1.053       20        8,192  -\n"
        "16,384       190        150  0.789       10       12,288  -")
    everywhere = {**SIMULATED_SWEEP, "points": SIMULATED_SWEEP["points"][1:],
                  "simulation": SIMULATED_SWEEP["simulation"][1:]}
    assert "not simulated" not in format_simulated_sizes(everywhere).split("\n", 2)[2]  # no column of dashes


def test_a_simulated_sweep_whose_sizes_are_not_its_points_is_refused() -> None:
    shifted = {**SIMULATED_SWEEP, "points": [{**p, "sram_bytes": 2 * p["sram_bytes"]}
                                             for p in SIMULATED_SWEEP["points"]]}
    with pytest.raises(ValueError, match="simulation 0 of the sweep's JSON is of a 1,024 B SRAM but point 0 of "
                                         "2,048 B"):
        add_simulated_sizes(HtmlPage("x"), shifted)
    with pytest.raises(ValueError, match="has no 'simulation'.*--simulate-network"):
        add_simulated_sizes(HtmlPage("x"), {"points": []})



def test_a_sweep_s_simulations_are_one_per_size_of_its_one_hardware() -> None:
    """NetworkSweep.simulations (what the page's section is drawn from): per size of one hardware, in order."""
    from types import SimpleNamespace

    from dsasim.architect.studies.network_eval import NetworkSweep
    from dsasim.hardware import preset

    blog, sizes = preset("blog"), (1024, 4096)
    row = tuple(SimpleNamespace(sram_bytes=b) for b in sizes)
    net = SimpleNamespace(name="net")
    ok = NetworkSweep(net, (blog,), sizes, (row,), simulations=("a reason", SimpleNamespace(sram_bytes=4096)))
    assert len(ok.simulations) == 2
    with pytest.raises(ValueError, match="one per size of one hardware: got 1 for 1 hardware x 2 sizes"):
        NetworkSweep(net, (blog,), sizes, (row,), simulations=("a reason",))
    with pytest.raises(ValueError, match="got 2 for 2 hardware x 2 sizes"):
        NetworkSweep(net, (blog, blog), sizes, (row, row), simulations=("a reason", "another"))
    with pytest.raises(ValueError, match="the simulation of a 1,024 B SRAM is given for the 4,096 B size"):
        NetworkSweep(net, (blog,), sizes, (row,), simulations=("a reason", SimpleNamespace(sram_bytes=1024)))


# ------------------------------------------------------------------------------------------------ the commands
@pytest.mark.parametrize("argv, says", [
    (["simulate", "demo2", "--html", "{tmp}/report.txt"],
     "dsasim simulate: --html '{tmp}/report.txt': the file name must end in .html or .htm"),
    (["network", "resnet18", "--html", "{tmp}/missing/report.html"],
     "dsasim network: --html '{tmp}/missing/report.html': folder '{tmp}/missing' does not exist; create it first "
     "(mkdir -p {tmp}/missing) or fix the path"),
    (["sweep-sram", "blog-conv", "--sizes", "16KiB:32KiB", "--json", "{tmp}/r.html", "--html", "{tmp}/r.html"],
     "dsasim sweep-sram: --json and --html both name {tmp}/r.html; give each output its own file"),
    (["sweep-sram", "--network", "resnet18", "--sizes", "16KiB:32KiB", "--html", "{tmp}"],
     "dsasim sweep-sram: --html '{tmp}' is a folder; give a file path, e.g. {tmp}/out.html"),
    (["sweep-sram", "--network", "llama3-8b-layer:phase=decode,context=64", "--vary-network", "batch=1,2",
      "--sizes", "1MiB", "--html", "{tmp}/r.html"],
     "dsasim sweep-sram: --html does not apply with --vary-network (one network per value: the JSON has every "
     "one's sweep; plots/llm_decode_batch.py draws them); leave it out"),
], ids=["simulate-suffix", "network-folder", "sweep-same-file", "network-sweep-folder", "vary-network"])
def test_a_bad_html_path_is_one_line_before_any_work(argv: list[str], says: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    import dsasim.cli.network

    def no_work(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("work started before the --html path was checked")

    # the networks' first piece of work, looked up in the CLI's own module at each call (a library function would
    # stay patched in any module that imports it by name while the patch holds)
    monkeypatch.setattr(dsasim.cli.network, "load_network_quietly", no_work)
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    assert capsys.readouterr().err == says.replace("{tmp}", str(tmp_path)) + "\n"
    assert not list(tmp_path.glob("*.html"))


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """`dsasim simulate demo2` with --json and --html, run twice: the page and the JSON of the first."""
    tmp = tmp_path_factory.mktemp("simulate")
    for k in (1, 2):
        assert main(["simulate", "demo2", "--json", str(tmp / f"{k}.json"), "--html", str(tmp / f"{k}.html")]) == 0
    return tmp, json.loads((tmp / "1.json").read_text())


def test_the_same_run_gives_the_same_page(simulated: tuple[Path, dict]) -> None:
    tmp, _ = simulated
    first = (tmp / "1.html").read_bytes()
    assert first == (tmp / "2.html").read_bytes()
    assert first.count(b"<svg") == 3  # the Gantt chart, the bandwidth and the SRAM occupancy timelines


TINY_NET = ("import torch.nn as nn\n"
            "example_input_shape = (1, 8, 8, 8)\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.conv = nn.Conv2d(8, 16, 3, padding=1, bias=False)\n"
            "        self.odd = nn.Upsample(scale_factor=2)\n"  # not modelled: the result is partial
            "        self.pool = nn.AdaptiveAvgPool2d(1)\n"
            "        self.fc = nn.Linear(16, 10)\n"
            "    def forward(self, x):\n"
            "        return self.fc(self.pool(self.odd(self.conv(x))).flatten(1))\n")
HARDWARE_NAME = '<b>hw</b> & "co"'  # a hardware file's name: on the page as text, never as markup


@pytest.fixture(scope="module")
def network_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """`dsasim network` of a four-layer module (one layer unmodelled) on hardware whose name is markup."""
    tmp = tmp_path_factory.mktemp("network")
    (tmp / "tinyhtml.py").write_text(TINY_NET)
    (tmp / "hw.toml").write_text('base = "blog"\nname = "<b>hw</b> & \\"co\\""\n')
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(tmp))
        assert main(["network", "tinyhtml:Net", "--hardware", str(tmp / "hw.toml"), "--jobs", "1", "--quiet",
                     "--json", str(tmp / "n.json"), "--html", str(tmp / "n.html")]) == 1  # partial: exit 1
    return tmp, json.loads((tmp / "n.json").read_text())


def test_the_network_page_escapes_names_from_user_files(network_run: tuple[Path, dict]) -> None:
    tmp, js = network_run
    html = (tmp / "n.html").read_text()
    assert js["hardware"] == HARDWARE_NAME
    assert "<b>hw" not in html and "&lt;b&gt;hw&lt;/b&gt; &amp; &quot;co&quot;" in html


@needs_chromium
def test_the_simulate_report_in_a_browser(simulated: tuple[Path, dict], tmp_path: Path) -> None:
    tmp, js = simulated
    _check_in_browser(tmp / "1.html", _screenshot_path(tmp_path, "report-simulate.png"),
                      f"{js['cycles']:,} cycles", f"{js['loaded_bytes'] + js['stored_bytes']:,} B",
                      "TensorCore stalls by cause")


@needs_chromium
def test_the_network_report_in_a_browser(network_run: tuple[Path, dict], tmp_path: Path) -> None:
    tmp, js = network_run
    text = _check_in_browser(tmp / "n.html", _screenshot_path(tmp_path, "report-network.png"),
                             f"{js['loaded_bytes'] + js['stored_bytes']:,} B", f"{js['cycles']:,}",
                             HARDWARE_NAME, "Layers left out of the totals", "PARTIAL")
    assert "odd\tunmodelled\tdsasim does not model module Upsample" in text  # the layer left out, and why


@needs_chromium
def test_the_sweep_report_in_a_browser(tmp_path: Path) -> None:
    js, html = tmp_path / "s.json", tmp_path / "s.html"
    assert main(["sweep-sram", "blog-conv", "--sizes", "16KiB:64KiB:2", "--no-simulate", "--quiet", "--json", str(js),
                 "--html", str(html)]) == 0
    largest = json.loads(js.read_text())["points"][-1]
    _check_in_browser(html, _screenshot_path(tmp_path, "report-sweep.png"),
                      f"traffic at 64 KiB\t{largest['traffic_bytes']:,} B",
                      f"its lower bound\t{largest['lower_bound_bytes']:,} B", "Sizing answers")


@needs_chromium
def test_the_network_sweep_report_in_a_browser(network_run: tuple[Path, dict], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    tmp, _ = network_run
    monkeypatch.syspath_prepend(str(tmp))
    js, html = tmp_path / "ns.json", tmp_path / "ns.html"
    assert main(["sweep-sram", "--network", "tinyhtml:Net", "--sizes", "1KiB,64KiB", "--within", "5%", "--jobs", "1",
                 "--simulate-network", "--quiet", "--json", str(js), "--html", str(html)]) == 1  # partial: the
    smallest = json.loads(js.read_text())["points"][0]                                       # Upsample is left out
    row = "\t".join(f"{smallest[k]:,}" for k in ("traffic_bytes", "lower_bound_bytes", "compulsory_bytes"))
    # a partial network is simulated at no size: each size's row says why (its estimate beside it)
    why = "cannot simulate tinyhtml:Net: layer(s) left out of the totals (odd); only a whole network is traced"
    _check_in_browser(html, tmp_path / "network-sweep.png", f"1 KiB\t{row}", f"{smallest['cycles']:,}",
                      "the smallest SRAM within 5% of compulsory traffic is 1 KiB", "PARTIAL",
                      f"1,024\t{smallest['cycles']:,}\t-\t-\t-\t-\t{why}")



REPOSITORY = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def simulated_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """`sweep-sram --network` of examples/network_levels.py's TwoLinear (a fused chain of two linears, a softmax)
    at 4 KiB and 64 KiB with --simulate-network, --json and --html, run twice from the repository's root (the
    command of docs/reports.md): the first page and its JSON."""
    tmp = tmp_path_factory.mktemp("simulated-sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPOSITORY)
        for k in (1, 2):
            assert main(["sweep-sram", "--network", "examples/network_levels.py:TwoLinear", "--sizes", "4KiB,64KiB",
                         "--simulate-network", "--jobs", "1", "--quiet", "--json", str(tmp / f"{k}.json"),
                         "--html", str(tmp / f"{k}.html")]) == 0
    return tmp, json.loads((tmp / "1.json").read_text())


def test_the_same_simulated_sweep_gives_the_same_page(simulated_sweep: tuple[Path, dict]) -> None:
    tmp, js = simulated_sweep
    first = (tmp / "1.html").read_bytes()
    assert first == (tmp / "2.html").read_bytes()
    # the sweep figure, the simulated sizes' figure, one timeline per size (both simulated)
    assert [s.get("not_simulated") for s in js["simulation"]] == [None, None]
    assert first.count(b"<svg") == 4


@needs_chromium
def test_the_simulated_network_sweep_report_in_a_browser(simulated_sweep: tuple[Path, dict], tmp_path: Path) -> None:
    tmp, js = simulated_sweep
    rows = [f"{s['sram_bytes']:,}\t{s['estimated_cycles']:,}\t{s['cycles']:,}\t"
            f"{s['cycles'] / s['estimated_cycles']:.3f}\t{s['overlap_cycles']:,}\t{s['peak_sram_bytes']:,}"
            for s in js["simulation"]]
    sections = [f"Simulated at {kib} KiB: the network in one timeline\nsimulated cycles\t{s['cycles']:,}"
                for kib, s in zip((4, 64), js["simulation"])]
    _check_in_browser(tmp / "1.html", _screenshot_path(tmp_path, "report-sweep-simulated.png"),
                      "Simulated at each size", *rows, *sections, height=2300)  # down to the sizes' figure


@needs_chromium
def test_a_network_simulation_section_in_a_browser(tmp_path: Path) -> None:
    html = _simulation_page().write(tmp_path / "sim.html")
    _check_in_browser(html, tmp_path / "simulated.png", "simulated cycles\t200", HOSTILE)  # (a stub: not in the docs)


@needs_chromium
def test_the_browser_check_sees_a_console_error(tmp_path: Path) -> None:
    """The harness itself: a page that logs an error, throws and loads a missing image is reported, all three."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><p>x</p><img src="missing.png">'
                   '<script>console.error("planted"); throw new Error("boom");</script></body></html>')
    page = open_page(bad)
    assert any("planted" in e for e in page.errors)
    assert any("boom" in e for e in page.errors)
    assert any("missing.png" in e for e in page.errors)
    assert len(page.requests) == 2
