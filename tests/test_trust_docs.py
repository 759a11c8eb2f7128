"""Error corpus of bench/readme_figures.py: a marker it cannot follow is a MarkerError naming the README line, and
the script prints one line and exits 2, never a traceback and never a silently skipped figure."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_checker():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "bench" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


figures = _load_checker()
FENCE = ["```", "out", "```"]

MALFORMED = [  # (README lines, a phrase the message must hold); the marker is always on line 2
    (["x", "<!-- figure dsasim demo -->", *FENCE], "needs ': COMMAND'"),
    (["x", "<!-- figure: -->", *FENCE], "needs ': COMMAND'"),
    (["x", "<!-- figure: ls -l -->", *FENCE], "must start with 'dsasim' or 'python'"),
    (["x", "<!-- figure: bash -c 'dsasim demo' -->", *FENCE], "must start with 'dsasim' or 'python'"),
    (["x", "<!-- figure sloww: dsasim demo -->", *FENCE], "unknown attribute 'sloww'"),
    (["x", "<!-- figure head=3: dsasim demo -->", *FENCE], "unknown attribute 'head=3'"),
    (["x", "<!-- figure \"9,076,736\": dsasim demo -->", *FENCE], "unknown attribute '9,076,736'"),
    (["x", "<!-- figure tail=three: dsasim demo -->", *FENCE], "tail= needs a whole number"),
    (["x", "<!-- figure exit=-1: dsasim demo -->", *FENCE], "exit= needs a whole number"),
    (["x", "<!-- figure table=: dsasim demo -->", *FENCE], "table= needs a whole number"),
    (["x", "<!-- figure grep=\"(\": dsasim demo -->", *FENCE], "is not a regular expression"),
    (["x", "<!-- figure until=\"[\": dsasim demo -->", *FENCE], "is not a regular expression"),
    (["x", "<!-- figure grep=\"a b: dsasim demo -->", *FENCE], "is never closed"),
    (["x", "<!-- figure: dsasim demo -->", "", *FENCE], "followed directly by its block"),
    (["x", "<!-- figure: dsasim demo -->"], "followed directly by its block"),
    (["x", "<!-- figure: dsasim demo -->", "some prose"], "followed by a ``` fence or a | table |"),
    (["x", "<!-- figure: dsasim demo -->", "```", "never closed"], "never closed"),
    (["x", "<!-- quote: dsasim demo -->", "It moves 9 B."], "names the figures it vouches for"),
    (["x", "<!-- quote \"9\": dsasim demo -->", ""], "followed directly by its block"),
]


@pytest.mark.parametrize("lines, phrase", MALFORMED, ids=[m[0][1][:40] for m in MALFORMED])
def test_a_malformed_marker_is_a_marker_error_naming_its_line(lines, phrase):
    with pytest.raises(figures.MarkerError, match="README line 2") as err:
        figures.find_figures("\n".join(lines) + "\n")
    assert phrase in str(err.value)


@pytest.mark.parametrize("lines, phrase", MALFORMED[::3], ids=[m[0][1][:40] for m in MALFORMED[::3]])
def test_the_script_refuses_a_malformed_marker_in_one_line_with_exit_2(lines, phrase, tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("\n".join(lines) + "\n")
    assert figures.main(["--check", "--readme", str(readme)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("readme_figures: README.md line 2: ") and phrase in err


def test_the_script_refuses_a_missing_or_undecodable_readme_in_one_line(tmp_path, capsys):
    missing = tmp_path / "nope.md"
    assert figures.main(["--readme", str(missing)]) == 2
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe not utf-8")
    assert figures.main(["--readme", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err and err.count("\n") == 2
    assert "cannot read" in err and "nope.md" in err and "bad.md" in err


def test_a_failing_command_is_exit_1_and_its_block_is_left_alone(tmp_path, capsys, monkeypatch):
    readme = tmp_path / "README.md"
    text = "x\n<!-- figure: dsasim demo --only nothing -->\n```\nold\n```\n"
    readme.write_text(text)
    monkeypatch.setattr(figures, "run_command", lambda command, root=figures.ROOT: (2, ""))
    assert figures.main(["--write", "--readme", str(readme)]) == 1
    out, _ = capsys.readouterr()
    assert "failed   README.md line 2: dsasim demo --only nothing -- exit status 2, expected 0" in out
    assert readme.read_text() == text
