"""bench/relayout.py, the script that lays dsasim/architect/ out as the flow, on a small repository of its own: what
it moves and rewrites, and each refusal (a dirty tree, a module with no home, a module path built at run time)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "relayout.py"


@pytest.fixture
def relayout(tmp_path, monkeypatch):
    """The script's module, pointed at a fresh git repository in tmp_path with a three-module architect/."""
    spec = importlib.util.spec_from_file_location("relayout_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # (its dataclass looks its module up while defined)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "HOME", {"loopnest": "nests", "search": "search/layer_search",
                                         "objective": "search", "absent": "studies"})
    files = {
        "dsasim/__init__.py": '_LAZY = {"search": "dsasim.architect.search", "LoopNest": "dsasim.architect.loopnest"}\n',
        "dsasim/architect/__init__.py": '"""architect"""\n',
        "dsasim/architect/loopnest.py": "from ..util import ceil_div\n",
        "dsasim/architect/objective.py": "OBJECTIVES = {}\n",
        "dsasim/architect/search.py": ("from . import objective\nfrom .loopnest import LoopNest\n"
                                       "from dsasim.architect.objective import OBJECTIVES\n"),
        "tests/test_x.py": ("from dsasim.architect import (loopnest,\n    search as s, objective)  # why\n"
                            "def test():\n    from dsasim.architect import search\n"
                            '    name = "dsasim.architect.search.search"\n'),
        "bench/mutation.py": 'M = ("dsasim/architect/search.py", "dsasim/architect/loopnest.py")\n',
        "docs/page.md": "`dsasim.architect.search.search` in `dsasim/architect/search.py`\n",
        "data.json": '{"module": "dsasim.architect.objective"}\n',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _commit(tmp_path)
    return module


def _commit(root: Path) -> None:
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"], cwd=root, check=True)


def test_an_old_path_in_a_file_of_a_kind_it_does_not_rewrite_is_refused(relayout, tmp_path, capsys):
    assert relayout.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("relayout: old module paths in files of a kind") and "data.json" in err
    assert (tmp_path / "dsasim/architect/search.py").exists()  # nothing moved


def test_the_move_and_every_form_of_reference(relayout, tmp_path, capsys):
    (tmp_path / "data.json").unlink()
    _commit(tmp_path)
    assert relayout.main([]) == 0
    out = capsys.readouterr().out
    assert "note: HOME names 'absent', which dsasim/architect/ does not hold: skipped" in out
    assert "move dsasim/architect/search.py -> dsasim/architect/search/layer_search.py" in out
    read = lambda name: (tmp_path / name).read_text()  # noqa: E731
    assert not (tmp_path / "dsasim/architect/search.py").exists()
    assert read("dsasim/architect/search/__init__.py").startswith('"""Which schedule is best')
    assert read("dsasim/__init__.py") == ('_LAZY = {"search": "dsasim.architect.search.layer_search", '
                                          '"LoopNest": "dsasim.architect.nests.loopnest"}\n')
    # relative imports made absolute from the file's old package; the absolute one keeps its form
    assert read("dsasim/architect/search/layer_search.py") == (
        "from dsasim.architect.search import objective\nfrom dsasim.architect.nests.loopnest import LoopNest\n"
        "from dsasim.architect.search.objective import OBJECTIVES\n")
    assert read("dsasim/architect/nests/loopnest.py") == "from dsasim.util import ceil_div\n"
    # one import per subpackage, each name bound as before (the renamed module keeps its old local name)
    assert read("tests/test_x.py") == (
        "from dsasim.architect.nests import loopnest\n"
        "from dsasim.architect.search import layer_search as s, objective  # why\n"
        "def test():\n    from dsasim.architect.search import layer_search as search\n"
        '    name = "dsasim.architect.search.layer_search.search"\n')
    assert read("bench/mutation.py") == ('M = ("dsasim/architect/search/layer_search.py", '
                                         '"dsasim/architect/nests/loopnest.py")\n')
    assert read("docs/page.md") == ("`dsasim.architect.search.layer_search.search` in "
                                    "`dsasim/architect/search/layer_search.py`\n")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert re.search(r"^R. dsasim/architect/search\.py -> dsasim/architect/search/layer_search\.py$", status, re.M)
    # run again on the laid-out tree: nothing to do, and the new names are never read as old ones
    _commit(tmp_path)
    assert relayout.main([]) == 0
    assert "already laid out" in capsys.readouterr().out
    assert relayout.Rewriter(relayout.plan_moves(["loopnest", "objective", "search"])[0]).old_references(
        read("tests/test_x.py") + read("docs/page.md") + read("dsasim/architect/search/layer_search.py")) == 0


def test_a_dry_run_changes_nothing(relayout, tmp_path, capsys):
    (tmp_path / "data.json").unlink()
    _commit(tmp_path)
    assert relayout.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "rewrite tests/test_x.py: 3 references" in out  # the import statement, `search`, the string
    assert out.endswith("3 modules moved, 13 references rewritten in 6 files (dry run: nothing changed)\n")
    assert subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True,
                          text=True).stdout == ""


@pytest.mark.parametrize("change, message", [
    ("dirty", "relayout: the working tree is dirty (1 paths; see git status): commit or stash first"),
    ("unknown", "relayout: modules of dsasim/architect/ with no home in HOME: fused (add each to HOME"),
    ("dynamic", "relayout: module paths built at run time, which no rewrite can follow (spell the full dotted "
                "path instead): tests/test_x.py:6"),
])
def test_refusals_are_one_line_and_exit_2(relayout, tmp_path, capsys, change, message):
    (tmp_path / "data.json").unlink()
    if change == "dirty":
        _commit(tmp_path)
        (tmp_path / "docs/page.md").write_text("edited\n")
    elif change == "unknown":
        (tmp_path / "dsasim/architect/fused.py").write_text("")
        _commit(tmp_path)
    else:
        with (tmp_path / "tests/test_x.py").open("a") as f:
            f.write('    mod = f"dsasim.architect.{name}"\n')
        _commit(tmp_path)
    assert relayout.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert (tmp_path / "dsasim/architect/search.py").exists()


def test_the_script_runs_as_a_command():
    """`python bench/relayout.py --help` (the integrator's entry) parses and says what it does."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--dry-run" in done.stdout
