"""The README's figures are what the commands print today (bench/readme_figures.py re-runs every marked command),
and the checker itself catches a stale figure while ignoring only what is machine-dependent."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _load_checker():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "bench" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


figures = _load_checker()


DOC_FILES = figures.doc_files(ROOT)


def test_readme_idle_breakdown_of_res2a_l1_adds_up_drain_included():
    # The docs' block of `dsasim simulate res2a-branch2b-l1` (checked against the command by the last test):
    # every idle TensorCore cycle is charged to one cause, so the causes sum to the idle total, and the idle total
    # is the run's cycles minus the TensorCore's busy cycles (its roofline term: the TensorCore is busy exactly
    # its compute cycles). As printed today: 6336 + 516 + 460 + 173 + 103 = 7588 = 346276 - 338688.
    text = (ROOT / "docs" / "model" / "levels.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- figure grep=\"^[0-9,]+ cycles|^TensorCore idle\": dsasim simulate res2a-branch2b-l1"):]
    block = block[:block.index("```\n", block.index("```") + 3)]
    number = lambda s: int(s.replace(",", ""))  # noqa: E731
    cycles = number(re.search(r"^([\d,]+) cycles", block, re.M).group(1))
    busy = number(re.search(r"tensorcore ([\d,]+)", block).group(1))
    idle_line = re.search(r"^TensorCore idle ([\d,]+) cycles: (.*)$", block, re.M)
    causes = {name: number(n) for name, n in re.findall(r"([\w:]+) ([\d,]+)", idle_line.group(2))}
    assert "drain" in causes  # the idle time after the last compute is charged too
    assert sum(causes.values()) == number(idle_line.group(1)) == cycles - busy


def test_every_output_block_of_the_readme_and_docs_names_its_command():
    assert len(DOC_FILES) > 10 and DOC_FILES[0] == README  # the README, then docs/ and its sub-folders
    unmarked = {figures.label(path): figures.unmarked_output_blocks(path.read_text(encoding="utf-8"))
                for path in DOC_FILES}
    assert {name: lines for name, lines in unmarked.items() if lines} == {}


def test_a_docs_file_is_named_in_its_messages():
    with pytest.raises(figures.MarkerError, match=r"^docs/x\.md line 2: .*needs ': COMMAND'"):
        figures.find_figures("x\n<!-- figure dsasim demo -->\n```\n```\n", "docs/x.md")
    figure, = figures.find_figures("x\n<!-- figure: dsasim demo -->\n```\nold\n```\n", "docs/x.md")
    outcome, = figures.check_readme("x\n<!-- figure: dsasim demo -->\n```\nold\n```\n", source="docs/x.md",
                                    run=fake_runner({"dsasim demo": (0, "new\n")}))[0]
    assert figure.source == "docs/x.md" and outcome.detail == "line 4: docs/x.md has 'old', the command prints 'new'"


def test_a_command_shown_in_two_files_runs_once():
    calls, printed = [], {}
    run = fake_runner({"dsasim demo": (0, "same\n")}, calls)
    for name in ("README.md", "docs/a.md"):
        outcomes, _ = figures.check_readme("<!-- figure: dsasim demo -->\n```\nsame\n```\n", source=name, run=run,
                                           printed=printed)
        assert [o.status for o in outcomes] == ["ok"]
    assert calls == ["dsasim demo"]


def test_an_unmarked_output_block_is_found_but_commands_and_code_are_not():
    text = "\n".join(["a", "```", ".venv/bin/dsasim demo", "dsasim search x", "```",  # commands to type: fine
                      "```python", "print(1)", "```",                                # code: fine
                      "<!-- figure: dsasim demo -->", "```", "table", "```",          # marked: fine
                      "b", "```", "dsasim search x", "traffic 9 B", "```", ""])      # output, unmarked
    # lines 1-5 the command fence, 6-8 the code, 9-12 the marked block, 13 "b": the unmarked fence opens on 14
    assert figures.unmarked_output_blocks(text) == [14]


# -- the checker, on a made-up README whose commands print what a dict says -------------------------------------

SEARCH_OUTPUT = """\
blog-conv on blog with 1536KiB SRAM (1,572,864 B), objective traffic:
  traffic             9,076,736 B  (loaded 7,471,104, stored 1,605,632, rmw 0)
  cycles              8,864,496    (simulated; TensorCore 8,830,976)
  searched     1,419,947 candidates in 0.44 s (3,251,259/s); 0.50 s in all
"""


def fake_runner(outputs: dict, calls: list | None = None):
    def run(command):
        if calls is not None:
            calls.append(command)
        return outputs[command]
    return run


def readme_with(block_lines, marker="<!-- figure: dsasim search blog-conv -->"):
    return "\n".join(["# t", "", "intro:", "", marker, "```", *block_lines, "```", "", "after"]) + "\n"


def test_a_stale_candidate_count_is_reported_but_a_new_duration_is_not():
    # The grouped-conv block went stale by its candidate count alone; its durations differ on every machine.
    same_figures_other_machine = SEARCH_OUTPUT.replace("in 0.44 s (3,251,259/s); 0.50 s", "in 7.28 s (905,401/s); 12 s")
    stale_count = SEARCH_OUTPUT.replace("searched     1,419,947", "searched     2,321,663")
    text = readme_with(SEARCH_OUTPUT.rstrip("\n").split("\n"))
    ok, _ = figures.check_readme(text, run=fake_runner({"dsasim search blog-conv": (0, same_figures_other_machine)}))
    assert [o.status for o in ok] == ["ok"]
    stale, rewritten = figures.check_readme(text, run=fake_runner({"dsasim search blog-conv": (0, stale_count)}))
    assert [o.status for o in stale] == ["differs"]
    assert "1,419,947" in stale[0].detail and "2,321,663" in stale[0].detail
    # lines: 1 "# t", 2 "", 3 "intro:", 4 "", 5 the marker, 6 the fence, 7..10 the output: its 4th line is line 10
    assert stale[0].detail.startswith("line 10:")
    assert rewritten == text.replace("1,419,947", "2,321,663")


def test_a_changed_figure_in_any_column_is_reported():
    for old, new in (("9,076,736 B", "9,076,737 B"), ("8,864,496", "8,864,469"), ("1536KiB", "1535KiB"),
                     ("rmw 0)", "rmw 10)")):
        text = readme_with(SEARCH_OUTPUT.rstrip("\n").split("\n"))
        outcomes, _ = figures.check_readme(
            text, run=fake_runner({"dsasim search blog-conv": (0, SEARCH_OUTPUT.replace(old, new))}))
        assert [o.status for o in outcomes] == ["differs"], (old, new)


def test_thousands_separators_are_not_a_difference_but_digits_are():
    text = readme_with(["346276 cycles, idle 7588"])
    run = fake_runner({"dsasim search blog-conv": (0, "346,276 cycles, idle 7,588\n")})
    assert [o.status for o in figures.check_readme(text, run=run)[0]] == ["ok"]
    run = fake_runner({"dsasim search blog-conv": (0, "346,277 cycles, idle 7,588\n")})
    assert [o.status for o in figures.check_readme(text, run=run)[0]] == ["differs"]


def test_a_quoted_regex_may_hold_a_colon():
    figure, = figures.find_figures('<!-- figure grep="^TensorCore idle [0-9]+ cycles: ": dsasim simulate x -->\n```\n```\n')
    assert figure.command == "dsasim simulate x"
    assert figure.selections == [("grep", "^TensorCore idle [0-9]+ cycles: ")]


def test_selections_from_until_grep_table_tail():
    output = "head\nschedule x\nrow 1\nrow 2\n\ndetail\n| a | b |\n|---|---|\n| 1 | 2 |\ntext\n| c |\nlast 1\nlast 2\n"
    assert figures.select(output, [("from", "^schedule"), ("until", "^$")]) == ["schedule x", "row 1", "row 2"]
    assert figures.select(output, [("grep", "^row|^last")]) == ["row 1", "row 2", "last 1", "last 2"]
    assert figures.select(output, [("table", "1")]) == ["| a | b |", "|---|---|", "| 1 | 2 |"]
    assert figures.select(output, [("table", "2")]) == ["| c |"]
    assert figures.select(output, [("table", "3")]) == []
    assert figures.select(output, [("tail", "2")]) == ["last 1", "last 2"]


def test_a_markdown_table_block_is_rewritten_whole_and_others_stay():
    text = "\n".join(["x", "<!-- figure table=1: python t.py -->", "| a |", "|---|", "| 1 |", "", "then",
                      "<!-- figure: python u.py -->", "```", "u 1", "```", ""])
    run = fake_runner({"python t.py": (0, "| a |\n|---|\n| 1 |\n| 2 |\n"), "python u.py": (0, "u 2\n")})
    outcomes, rewritten = figures.check_readme(text, run=run)
    assert [o.status for o in outcomes] == ["differs", "differs"]
    # rewritten from the end, so the first block growing a row does not shift the second one's range
    assert rewritten == "\n".join(["x", "<!-- figure table=1: python t.py -->", "| a |", "|---|", "| 1 |", "| 2 |",
                                   "", "then", "<!-- figure: python u.py -->", "```", "u 2", "```", ""])


def test_a_quote_needs_its_figures_in_the_output_and_in_the_paragraph():
    text = '<!-- quote "9,076,736" "8,864,496": dsasim search blog-conv -->\nIt moves 9,076,736 B in 8,864,496 cycles.\n'
    run = fake_runner({"dsasim search blog-conv": (0, SEARCH_OUTPUT)})
    assert [o.status for o in figures.check_readme(text, run=run)[0]] == ["ok"]
    gone = fake_runner({"dsasim search blog-conv": (0, SEARCH_OUTPUT.replace("8,864,496", "8,900,000"))})
    outcome, = figures.check_readme(text, run=gone)[0]
    assert outcome.status == "differs" and "not printed any more: 8,864,496" in outcome.detail
    edited = text.replace("in 8,864,496 cycles", "in 8.9 M cycles")
    outcome, = figures.check_readme(edited, run=run)[0]
    assert outcome.status == "differs" and "not in the paragraph: 8,864,496" in outcome.detail


def test_a_command_behind_two_blocks_runs_once():
    calls = []
    text = "\n".join(["<!-- figure table=1: python t.py -->", "| a |", "", "<!-- figure table=2: python t.py -->",
                      "| b |", ""])
    outcomes, _ = figures.check_readme(text, run=fake_runner({"python t.py": (0, "| a |\n\n| b |\n")}, calls))
    assert [o.status for o in outcomes] == ["ok", "ok"] and calls == ["python t.py"]


def test_exit_status_slow_and_measured_markers():
    calls = []
    text = "\n".join(["<!-- figure exit=1: dsasim network x -->", "```", "partial", "```",
                      "<!-- figure slow: dsasim demo -->", "```", "table", "```",
                      "<!-- measured: python bench/bench_timing.py --full -->", "| 6.1 s |", ""])
    run = fake_runner({"dsasim network x": (0, "partial\n"), "dsasim demo": (0, "table\n")}, calls)
    outcomes, _ = figures.check_readme(text, run=run)
    assert [(o.figure.command, o.status) for o in outcomes] == [
        ("dsasim network x", "failed"), ("python bench/bench_timing.py --full", "measured")]
    assert "exit status 0, expected 1" in outcomes[0].detail
    assert calls == ["dsasim network x"]  # the slow block is skipped, a measured figure never run
    outcomes, _ = figures.check_readme(text, slow=True, run=fake_runner({"dsasim network x": (1, "partial\n"),
                                                                         "dsasim demo": (0, "table 2\n")}))
    assert [o.status for o in outcomes] == ["ok", "differs", "measured"]


def test_write_then_check_is_clean(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(readme_with(["old figure 1"]))
    outputs = {"dsasim search blog-conv": (0, "new figure 2\n")}
    _, rewritten = figures.check_readme(readme.read_text(), run=fake_runner(outputs))
    readme.write_text(rewritten)
    outcomes, again = figures.check_readme(readme.read_text(), run=fake_runner(outputs))
    assert [o.status for o in outcomes] == ["ok"] and again == rewritten
    assert "new figure 2" in rewritten and "old figure 1" not in rewritten


@pytest.mark.parametrize("line, expected", [
    ("1,234 B in 0.5 s", "1234 B in <time>"),
    ("searched 10 candidates in 7.28 s (905,401/s); 12 s in all", "searched 10 candidates in <time> (<rate>); <time> in all"),
    ("demo3-2 on blog: ok (18.7 s)", "demo3-2 on blog: ok (<time>)"),
    ("took 12 ms, 3 steps, 56 trips, 2 sets", "took <time>, 3 steps, 56 trips, 2 sets"),
])
def test_only_durations_and_rates_are_masked(line, expected):
    assert figures.comparable(line) == expected


def test_a_marker_command_runs_in_a_fresh_folder_with_scripts_found_in_the_repository(tmp_path):
    # examples/bandwidth_plot.py writes bandwidth.png where it runs: never into the repository
    root = tmp_path / "repo"
    (root / "examples").mkdir(parents=True)
    (root / "examples" / "where.py").write_text("import os\nopen('made.txt', 'w').write('x')\nprint(os.getcwd())\n")
    status, out = figures.run_command("python examples/where.py", root)
    assert status == 0 and Path(out.strip()) != root and not (root / "made.txt").exists()


# last, so that a planted bug in the checker fails a fast test first (bench/mutation.py runs with -x)
def test_readme_and_docs_cheap_figures_are_what_the_commands_print():
    # CI runs the blocks that take seconds; `python bench/readme_figures.py --check --slow` runs the rest by hand.
    printed: dict = {}
    outcomes = []
    for path in DOC_FILES:
        outcomes += figures.check_readme(path.read_text(encoding="utf-8"), slow=False, source=figures.label(path),
                                         printed=printed)[0]
    checked = [o for o in outcomes if o.status != "measured"]
    # per-tensor, by-scope, grouped conv, slide and no-slide, blog-conv, res2a-l1, the README's demo and example,
    # simulate demo2, the six commands' --help
    assert len(checked) >= 15
    stale = [f"{o.figure.source} line {o.figure.marker_line + 1}: {o.figure.command}: {o.status} {o.detail}"
             for o in checked if o.status != "ok"]
    assert not stale, "\n".join(stale)

