"""The README is the short front page the issue asks for: at most ~200 lines, CI's exact test command, a
question -> command -> page table naming every command, what is not modelled, and links that lead somewhere (the
pages themselves are built by tests/test_docs_build.py)."""

import re
import shlex
from pathlib import Path

from dsasim.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_the_readme_is_short():
    assert len(README.read_text(encoding="utf-8").split("\n")) <= 200


def test_the_readme_holds_the_test_command_that_ci_runs():
    ci_line = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().split("\n")[-1]
    assert ci_line == ("python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
                       ".venv/bin/python -m pytest -q -n auto")
    assert f"\n{ci_line}\n" in README.read_text(encoding="utf-8")


def _question_table(text: str) -> list[list[str]]:
    """The rows of the README's "Which command answers my question" table, as cells (header and rule left out)."""
    table = text[text.index("| your question | the command | read |"):]
    lines = table[:table.index("\n\n")].split("\n")[2:]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]


def test_the_question_table_names_every_command_and_a_page_for_each_question():
    rows = _question_table(README.read_text(encoding="utf-8"))
    assert all(len(row) == 3 for row in rows)
    named = [re.findall(r"`dsasim ([\w-]+)", command) for _, command, _ in rows]
    assert sorted({name for names in named for name in names}) == sorted(c.name for c in COMMANDS)
    # sweep-sram in both its forms: a layer or chain, and --network
    sweeps = [command for _, command, _ in rows if "`dsasim sweep-sram" in command]
    assert any("--network" in c for c in sweeps) and any("--network" not in c for c in sweeps)
    # every question leads somewhere: a docs page or a section of this README
    assert all(re.search(r"\]\((docs/[^)]+|#[a-z-]+)\)", read) for _, _, read in rows)
    assert len(rows) >= 10 and all(question.endswith("?") for question, _, _ in rows)


def test_every_command_of_the_question_table_parses_and_names_a_real_layer():
    """The table's commands are not run (some take minutes); their options must still exist and their layers,
    chains and networks be real, so a renamed option or preset cannot leave the front page stale."""
    from dsasim.architect.studies.network_models import PRESETS
    from dsasim.architect.studies.target_kinds import target_of
    from dsasim.cli import build_parser
    from dsasim.hardware import preset

    commands = [span for _, cell, _ in _question_table(README.read_text(encoding="utf-8"))
                for span in re.findall(r"`(dsasim [^`]+)`", cell)]
    assert len(commands) >= 10
    for command in commands:
        args = build_parser().parse_args(shlex.split(command)[1:])
        layer = getattr(args, "layer", None) or getattr(args, "name", "")
        if args.command in ("search", "sweep-sram", "shapes") and layer:
            target_of(layer, preset("blog"))  # a layer, chain or attention: the registry that loads it
        network = getattr(args, "network", None) or (layer if args.command == "network" else None)
        if network and ":" not in network and not network.endswith(".onnx"):
            assert network in PRESETS, command


def _slug(heading: str) -> str:
    """The anchor mkdocs' toc extension gives a heading (its default slugify)."""
    text = re.sub(r"[^\w\s-]", "", heading.encode("ascii", "ignore").decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_every_anchor_the_readme_links_is_a_heading_there():
    """mkdocs checks the anchors of docs/, not the README's: a renamed heading must not leave a dead #link here."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", text)
    assert len(links) >= 4
    for target, anchor in links:
        page = (ROOT / target).read_text(encoding="utf-8") if target else text
        headings = {_slug(h) for h in re.findall(r"^#+ (.+)$", page, re.M)}
        assert anchor in headings, f"README links {target}#{anchor}, a heading that is not there"


def test_the_readme_says_what_is_not_modelled_and_lists_every_one_level_refusal():
    """A reader looking for whole LLMs or file formats finds a plain no; the features that refuse hardware with
    levels below the SRAM are the ones `dsasim.one_level` refuses (a new one must be listed)."""
    from dsasim.one_level import ONE_LEVEL_FEATURES
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Not modelled yet"):]
    section = " ".join(section[:section.index("\n## ")].split())  # a name may wrap across lines
    for phrase in ("LLM", "ONNX", "Timeloop"):
        assert phrase in section
    refused = [name for name in ONE_LEVEL_FEATURES if name != "search"]  # the plain search runs per level instead
    assert [name for name in refused if name not in section] == []


def test_every_relative_link_of_the_readme_exists():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert len(local) >= 20
    assert [t for t in local if not (ROOT / t).exists()] == []
