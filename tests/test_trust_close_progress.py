"""Issue 26, last gaps: progress with an estimate for the level search (`search LAYER --hardware blog-l1`), the level
sweep (`sweep-sram LAYER --hardware blog-l1`) and the network sweep (`sweep-sram --network`), on stderr through the
project's one bar (`sweep.ProgressBar`, or the executor's task bar for the network's searches), silenced by
`--quiet`; stdout (but its wall-time line) and the JSON are the same with or without the bar.

Bars are shown under pytest's captured stderr as they are in a terminal (the existing sweep test relies on it); the
search's bar appears only for work estimated beyond `PROGRESS_SECONDS`, which the test lowers to force it.
"""

from __future__ import annotations

import importlib

import pytest

from dsasim import preset
from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.search.level_search import OUTER_PROGRESS_SHARE, search_levels, sweep_levels
from dsasim.cli import main

LAYER = "gemm-64"


def _without_wall_times(out: str) -> list[str]:
    """stdout without its timing lines (seconds and rates change from run to run)."""
    return [line for line in out.splitlines() if " s (" not in line and not line.rstrip().endswith(" s")
            and "searched" not in line]


def _run(argv, capsys) -> tuple[str, str]:
    assert main(argv) == 0
    return capsys.readouterr()


def test_level_search_fractions_rise_from_the_outer_search_to_one():
    """The outer (SRAM) search reports within [0, OUTER_PROGRESS_SHARE], then each inner search an equal step up
    to 1; the fractions never go back."""
    seen: list[float] = []
    search_levels(parse_layer(LAYER), preset("blog-l1"), None, "traffic", progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    outer = [f for f in seen if f <= OUTER_PROGRESS_SHARE + 1e-12]
    assert len(outer) >= 2 and outer[-1] == pytest.approx(OUTER_PROGRESS_SHARE)  # the outer search's own progress


def test_level_sweep_fractions_give_each_size_an_equal_part():
    """Two sizes: the first size's search reports within [0, 1/2], the second's within [1/2, 1]."""
    seen: list[float] = []
    sweep_levels(parse_layer(LAYER), preset("blog-l1"), "SRAM", [64 * 1024, 128 * 1024], "traffic",
                 progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert any(0 < f < 0.5 for f in seen) and any(0.5 < f < 1 for f in seen)


def test_level_search_shows_its_bar_with_the_estimate_and_prints_the_same(monkeypatch, tmp_path, capsys):
    quiet_json, bar_json = tmp_path / "a.json", tmp_path / "b.json"
    argv = ["search", LAYER, "--hardware", "blog-l1", "--confirm", "0", "--json"]
    out, err = _run(argv + [str(quiet_json)], capsys)
    assert err == ""  # a short search (estimated under PROGRESS_SECONDS): no bar
    monkeypatch.setattr(importlib.import_module("dsasim.cli.search"), "PROGRESS_SECONDS", -1.0)
    bar_out, bar_err = _run(argv + [str(bar_json)], capsys)
    assert f"search {LAYER} on blog-l1 (estimated " in bar_err and "100%" in bar_err
    assert _without_wall_times(bar_out) == _without_wall_times(out)
    assert bar_json.read_bytes() == quiet_json.read_bytes()


def test_level_sweep_shows_its_bar_unless_quiet_and_prints_the_same(tmp_path, capsys):
    quiet_json, bar_json = tmp_path / "a.json", tmp_path / "b.json"
    argv = ["sweep-sram", LAYER, "--hardware", "blog-l1", "--sizes", "64KiB,128KiB", "--json"]
    out, err = _run(argv + [str(quiet_json), "--quiet"], capsys)
    assert err == ""
    bar_out, bar_err = _run(argv + [str(bar_json)], capsys)
    assert f"sweep {LAYER} on blog-l1 (estimated " in bar_err and "100%" in bar_err
    assert _without_wall_times(bar_out) == _without_wall_times(out)
    assert bar_json.read_bytes() == quiet_json.read_bytes()


def test_network_sweep_bar_carries_the_estimate_unless_quiet_and_prints_the_same(tmp_path, capsys):
    """A one-layer network from a file: the executor's bar counts its 1 search, labelled with the estimate."""
    path = tmp_path / "tiny_net.py"
    path.write_text("import torch.nn as nn\nexample_input_shape = (2, 8)\nnet = nn.Linear(8, 4)\n")
    quiet_json, bar_json = tmp_path / "a.json", tmp_path / "b.json"
    argv = ["sweep-sram", "--network", f"{path}:net", "--sizes", "1KiB,4KiB", "--jobs", "1", "--json"]
    out, err = _run(argv + [str(quiet_json), "--quiet"], capsys)
    assert "searches" not in err
    bar_out, bar_err = _run(argv + [str(bar_json)], capsys)
    # (the bar opens at 0/1; a search done within tqdm's refresh interval is never drawn at 1/1)
    assert f"{path}:net: searches (estimated " in bar_err and "0/1" in bar_err
    assert bar_out == out
    assert bar_json.read_bytes() == quiet_json.read_bytes()
