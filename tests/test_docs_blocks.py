"""Every code block of the README and docs/ runs (bench/doc_blocks.py): commands are run, Python is executed,
TOML is loaded as hardware, a copy of an example equals its file, and a block that must not run says why. The
checker itself refuses a block no rule covers, and reports a block that fails."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


blocks = _load("doc_blocks")


def _all_blocks():
    found = []
    for path in blocks.doc_files(ROOT):
        found += blocks.find_blocks(path.read_text(encoding="utf-8"), blocks.label(path))
    return found


ALL = _all_blocks()  # a BlockError here (a block no rule covers) fails collection, naming the file and line
FAST = [b for b in ALL if blocks.runnable(b, slow=False)]


def test_every_block_is_covered_and_most_run():
    kinds = {kind: sum(b.kind == kind for b in ALL) for kind in ("figure", "commands", "python", "toml", "file",
                                                                   "norun")}
    assert kinds["python"] >= 3 and kinds["toml"] >= 2 and kinds["file"] >= 4 and kinds["commands"] >= 5
    assert kinds["figure"] >= 15
    assert kinds["norun"] <= 6  # install commands, a fragment, a Dask cluster: each with its reason
    assert all(b.reason for b in ALL if b.kind == "norun")


# -- the checker, on made-up markdown ----------------------------------------------------------------------------

@pytest.mark.parametrize("lines, phrase", [
    (["```", "ls -l", "```"], "'ls -l' is not a dsasim or python command"),
    (["```sh", "dsasim demo | head", "```"], "is not a dsasim or python command"),
    (["```sh", "dsasim demo && rm -rf x", "```"], "is not a dsasim or python command"),
    (["```", "", "```"], "it holds no command"),
    (["```yaml", "a: 1", "```"], "a ```yaml block is neither run nor marked"),
    (["<!-- norun -->", "```", "x", "```"], "a norun marker says why"),
    (["<!-- norun: -->", "```", "x", "```"], "a norun marker says why"),
    (["<!-- file: -->", "```python", "x", "```"], "a file marker names the file"),
    (["<!-- run fast -->", "```sh", "dsasim demo", "```"], "unknown run attribute 'fast'"),
    (["<!-- run exit=1 -->", "```python", "x = 1", "```"], "exit=N applies to commands"),
    (["```python", "x = 1"], "never closed"),
    (["``` python script", "x = 1", "```"], "a fence's language is one word"),
])
def test_a_block_no_rule_covers_is_an_error_naming_its_line(lines, phrase):
    with pytest.raises(blocks.BlockError, match=r"^docs/x\.md line \d+: ") as err:
        blocks.find_blocks("\n".join(["# x", *lines, ""]), "docs/x.md")
    assert phrase in str(err.value)


def test_blocks_are_classified_by_marker_and_language():
    text = "\n".join([
        "<!-- figure: dsasim demo -->", "```", "a table", "```",                          # output: not run here
        "```sh", "dsasim search x  # why", ".venv/bin/dsasim demo \\", "  --count-only", "```",
        "<!-- run slow exit=1 -->", "```", "python -m kernels.conv_mapping", "```",
        "```python", "print(1)", "```",
        "```toml", "base = \"blog\"", "```",
        "<!-- file: examples/user_schedule.py -->", "```python", "x", "```",
        "<!-- norun: it installs -->", "```sh", "pip install x", "```",
        "- a list item:", "", "  ```python", "  if True:", "      y = 2", "  ```", ""])
    found = blocks.find_blocks(text, "t.md")
    assert [(b.kind, b.slow, b.exit_status) for b in found] == [
        ("figure", False, 0), ("commands", False, 0), ("commands", True, 1), ("python", False, 0),
        ("toml", False, 0), ("file", False, 0), ("norun", False, 0), ("python", False, 0)]
    assert blocks.command_lines(found[1].body) == ["dsasim search x  # why", ".venv/bin/dsasim demo    --count-only"]
    assert found[5].file == "examples/user_schedule.py" and found[6].reason == "it installs"
    assert found[7].body == "if True:\n    y = 2\n"  # an indented fence loses its indent
    assert [b.line for b in found] == [2, 5, 11, 14, 17, 21, 25, 30]
    assert [blocks.runnable(b, slow=False) for b in found] == [False, True, False, True, True, True, False, True]


def test_a_failing_block_is_reported_and_a_good_one_is_not(tmp_path):
    def run(text):
        block, = blocks.find_blocks(text, "t.md")
        return blocks.run_block(block, tmp_path)

    assert run("```python\nprint('fine')\n```\n") == (True, "")
    ok, detail = run("```python\nraise ValueError('planted')\n```\n")
    assert not ok and "ValueError: planted" in detail
    assert run("```sh\ndsasim --help\n```\n") == (True, "")
    ok, detail = run("```sh\ndsasim --help\ndsasim search no-such-layer\n```\n")
    assert not ok and detail.startswith("dsasim search no-such-layer: exit status 2, expected 0: dsasim search:")
    assert run("<!-- run exit=2 -->\n```sh\ndsasim search no-such-layer\n```\n") == (True, "")
    assert run('```toml\nbase = "blog"\nsram_bytes = 524288\n```\n') == (True, "")
    ok, detail = run('```toml\nbase = "blog"\nsram_byte = 524288\n```\n')
    assert not ok and "unknown key(s) ['sram_byte']" in detail
    ok, detail = run("<!-- file: examples/user_schedule.py -->\n```python\nimport numpy\n```\n")
    assert not ok and detail == "the block differs from examples/user_schedule.py: copy the file into it again"
    copy = (ROOT / "examples" / "user_schedule.py").read_text(encoding="utf-8")
    assert run(f"<!-- file: examples/user_schedule.py -->\n```python\n{copy}```\n") == (True, "")


def test_a_block_runs_in_its_own_folder_and_writes_nothing_here(tmp_path):
    block, = blocks.find_blocks("```python\nopen('made-by-a-block.txt', 'w').write('x')\n```\n", "t.md")
    assert blocks.run_block(block, tmp_path) == (True, "")
    assert (tmp_path / "made-by-a-block.txt").exists() and not (ROOT / "made-by-a-block.txt").exists()


def test_the_script_refuses_an_uncovered_block_in_one_line_with_exit_2(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("x\n```\nls\n```\n")
    assert blocks.main([str(page)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("doc_blocks: page.md line 2: ")


def test_a_dsasim_argument_naming_a_repository_file_is_given_by_its_absolute_path():
    # the block runs in a temporary folder: tests/data/... must still name the file; an option, a path that is no
    # file of the repository and a plain word stay as written
    argv = blocks.argv_of("dsasim search tests/data/zigzag/small_gemm.yaml --json out/x.json gemm-64", ROOT)
    assert argv[3:] == ["search", f"{ROOT}/tests/data/zigzag/small_gemm.yaml", "--json", "out/x.json", "gemm-64"]
    # FILE.py:ATTR (a network of a file): the file's path made absolute, the name kept; a name after a file that
    # is no Python file of the repository stays as written
    argv = blocks.argv_of("dsasim network examples/network_levels.py:TwoLinear out/x.py:Net", ROOT)
    assert argv[3:] == ["network", f"{ROOT}/examples/network_levels.py:TwoLinear", "out/x.py:Net"]


# last, so that a planted bug in the checker fails a fast test first (bench/mutation.py runs with -x)
@pytest.mark.parametrize("block", FAST, ids=[b.where for b in FAST])
def test_the_block_runs(block, tmp_path):
    ok, detail = blocks.run_block(block, tmp_path)
    assert ok, f"{block.where}: {detail}"
