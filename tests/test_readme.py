"""The README is the short front page the issue asks for: at most ~200 lines, CI's exact test command, every
command in its table, and links that lead somewhere (the pages themselves are built by tests/test_docs_build.py)."""

import re
from pathlib import Path

from dsasim.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_the_readme_is_short():
    assert len(README.read_text(encoding="utf-8").split("\n")) <= 200


def test_the_readme_holds_the_test_command_that_ci_runs():
    ci_line = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().split("\n")[-1]
    assert ci_line == ("python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
                       ".venv/bin/python -m pytest -q")
    assert f"\n{ci_line}\n" in README.read_text(encoding="utf-8")


def test_the_commands_table_has_every_command_once():
    text = README.read_text(encoding="utf-8")
    table = text[text.index("| command | the question it answers |"):]
    table = table[:table.index("\n\n")]
    named = re.findall(r"^\| `dsasim ([\w-]+)", table, re.M)
    # sweep-sram has two rows: a layer or chain, and --network
    assert sorted(set(named)) == sorted(c.name for c in COMMANDS) and named.count("sweep-sram") == 2
    assert len(named) == len(COMMANDS) + 1


def test_every_relative_link_of_the_readme_exists():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert len(local) >= 20
    assert [t for t in local if not (ROOT / t).exists()] == []
