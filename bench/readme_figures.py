"""The figures of the README and of docs/ come from the commands that print them: re-run each marked command and
compare or rewrite.

    python bench/readme_figures.py [--check | --write] [--slow] [--only SUBSTRING ...] [--list] [PATH ...]

PATH: the markdown files to check (default: README.md and every docs/**/*.md; `--readme PATH` is the old spelling
of one PATH).

Three markers, each an HTML comment on a line of its own (markdown does not show them):

* `<!-- figure[ ATTRS]: COMMAND -->` right before a fenced block or a markdown table: the block is COMMAND's
  standard output (selected by ATTRS). `--check` reports every block that differs; `--write` rewrites them.
* `<!-- quote "FIGURE" ...[ ATTRS]: COMMAND -->` right before a paragraph that quotes figures in prose: each
  FIGURE must occur in the paragraph and in COMMAND's output (`--write` cannot rewrite prose: fix it by hand).
* `<!-- measured: COMMAND -->` before machine-dependent figures (wall time, peak RSS): never compared, only
  listed; COMMAND is what measures them on your machine.

COMMAND is `dsasim ARGS` (run as `python -m dsasim.cli ARGS` with this Python) or `python ARGS` (a script path
relative to the repository root), run with no shell in a fresh temporary folder: files it writes land nowhere. ATTRS, separated by spaces: `slow` (checked only with `--slow`: too long for the
test suite), `exit=N` (the exit status it must give, default 0), `from=REGEX` (the output from the first line
matching REGEX), `until=REGEX` (up to the first later line matching REGEX; `until="^$"`: to the first blank
line), `grep=REGEX` (only the lines matching REGEX), `table=N` (the N-th markdown table of the output), `tail=N`
(the last N lines); selections apply in that order; quote REGEX with "..." when it has spaces.

Machine-dependent parts of an output line (durations such as `7.28 s`, rates such as `1,469,451/s`) are exempt:
both sides are compared with them masked, and `--write` keeps what this run printed. Numbers are compared with
their thousands separators removed, so `346276` and `346,276` are the same figure.

A plain ``` fence that shows anything but commands to type must follow a figure marker (`unmarked` otherwise).

Exit status: 0 every compared figure matches (or was rewritten); 1 some differ, or a command failed; 2 a mistake
in a marker or on the command line (one line on stderr naming the file and line).

Code blocks that are not figures (commands to type, Python, TOML) are run by `bench/doc_blocks.py`.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKER = re.compile(r"^<!--\s*(figure|quote|measured)\b(.*?)-->\s*$")
FLAGS = frozenset({"slow"})
ATTRIBUTES = ("exit", "from", "until", "grep", "table", "tail")
# Machine-dependent tokens of an output: a duration (`7.28 s`, `(18.7 s)`, `12 ms`) and a rate (`905,401/s`).
VOLATILE = (
    (re.compile(r"\d[\d,]*(?:\.\d+)?/s\b"), "<rate>"),
    (re.compile(r"\d[\d,]*(?:\.\d+)? ?(?:s|ms|us|µs)\b"), "<time>"),
)
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
COMMAND_TIMEOUT_S = 1800


class MarkerError(Exception):
    """A marker that cannot be followed: unknown attribute, no block after it, a bad command (exit status 2)."""


@dataclass
class Figure:
    """One marker of the README: its kind, command, selection and where its block lies (0-based lines)."""

    kind: str  # figure | quote | measured
    command: str
    marker_line: int
    block_start: int = 0  # first line of the block (a fence's opening line, a table's first row, a paragraph)
    block_end: int = 0  # one past its last line
    slow: bool = False
    exit_status: int = 0
    selections: list[tuple[str, str]] = field(default_factory=list)  # (attribute, value) in ATTRIBUTES order
    quoted: list[str] = field(default_factory=list)
    block_kind: str = ""  # fence | table | paragraph
    source: str = "README"  # the file's name in messages

    @property
    def fenced(self) -> bool:
        """Whether the block is a fenced code block (else a markdown table or a paragraph)."""
        return self.block_kind == "fence"


def _split_at_colon(text: str) -> tuple[str, str, str]:
    """`text` split at its first colon outside double quotes (a quoted regex may hold one), as str.partition."""
    quoted = False
    for at, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == ":" and not quoted:
            return text[:at], ":", text[at + 1:]
    return text, "", ""


def doc_files(root: Path = ROOT) -> list[Path]:
    """The markdown files whose figures are kept true: the README, then docs/ (sorted, sub-folders included)."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def label(path: Path, root: Path = ROOT) -> str:
    """A file's name in messages: relative to the repository when inside it, else its own name."""
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return path.name


def parse_marker(lines: Sequence[str], index: int, source: str = "README") -> Figure | None:
    """The Figure of the marker at `lines[index]` of file `source`, its block located; None if no marker."""
    match = MARKER.match(lines[index])
    if match is None:
        return None
    kind, rest = match.group(1), match.group(2)
    head, colon, command = _split_at_colon(rest)
    command = command.strip()
    where = f"{source} line {index + 1}"
    if rest.count('"') % 2:
        raise MarkerError(f"{where}: a \" is never closed (quote a value with spaces as \"...\")")
    if not colon or not command:
        raise MarkerError(f"{where}: a {kind} marker needs ': COMMAND' before '-->'")
    try:
        tokens = shlex.split(head)
        words = shlex.split(command)
    except ValueError as err:
        raise MarkerError(f"{where}: {err} (quote a value with spaces as \"...\")") from None
    if words[0] not in ("dsasim", "python"):
        raise MarkerError(f"{where}: the command must start with 'dsasim' or 'python', got {words[0]!r}")
    figure = Figure(kind, command, index, source=source)
    chosen: dict[str, str] = {}
    for token in tokens:
        name, eq, value = token.partition("=")
        if token in FLAGS:
            figure.slow = True
        elif eq and name in ATTRIBUTES:
            chosen[name] = value
        elif kind == "quote" and not eq:
            figure.quoted.append(token)
        else:
            allowed = ", ".join((*sorted(FLAGS), *(f"{a}=..." for a in ATTRIBUTES)))
            raise MarkerError(f"{where}: unknown attribute {token!r}; allowed: {allowed}")
    for name in ("exit", "table", "tail"):
        if name in chosen and not chosen[name].isdigit():
            raise MarkerError(f"{where}: {name}= needs a whole number, got {chosen[name]!r}")
    for name in ("from", "until", "grep"):
        if name in chosen:
            try:
                re.compile(chosen[name])
            except re.error as err:
                raise MarkerError(f"{where}: {name}={chosen[name]!r} is not a regular expression ({err})") from None
    figure.exit_status = int(chosen.pop("exit", "0"))
    figure.selections = [(name, chosen[name]) for name in ATTRIBUTES if name in chosen]
    if kind == "quote" and not figure.quoted:
        raise MarkerError(f"{where}: a quote marker names the figures it vouches for: <!-- quote \"1,234\": ... -->")
    if kind == "measured":
        return figure
    _locate_block(figure, lines, where)
    return figure


def _locate_block(figure: Figure, lines: Sequence[str], where: str) -> None:
    """Set the block's line range: the fence, table or paragraph right after the marker; MarkerError if none."""
    start = figure.marker_line + 1
    if start >= len(lines) or not lines[start].strip():
        raise MarkerError(f"{where}: a {figure.kind} marker must be followed directly by its block (no blank line)")
    first = lines[start]
    if figure.kind == "quote":
        end = start
        while end < len(lines) and lines[end].strip():
            end += 1
        figure.block_kind = "paragraph"
    elif first.startswith("```"):
        end = start + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise MarkerError(f"{where}: the fenced block after the marker is never closed")
        end += 1
        figure.block_kind = "fence"
    elif first.startswith("|"):
        end = start
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        figure.block_kind = "table"
    else:
        raise MarkerError(f"{where}: a figure marker must be followed by a ``` fence or a | table |")
    figure.block_start, figure.block_end = start, end


def find_figures(text: str, source: str = "README") -> list[Figure]:
    """Every marker of a markdown file's text, in order; MarkerError for the first malformed one."""
    lines = text.split("\n")
    figures = []
    for index in range(len(lines)):
        figure = parse_marker(lines, index, source)
        if figure is not None:
            figures.append(figure)
    return figures


COMMAND_PREFIXES = ("python3 ", "python ", ".venv/bin/", "dsasim ")


def unmarked_output_blocks(text: str) -> list[int]:
    """The 1-based lines of plain ``` fences that show output (a line that is not a command to type) but follow
    no figure marker: a figure that nothing would keep up to date."""
    lines = text.split("\n")
    found, index = [], 0
    while index < len(lines):
        if not lines[index].startswith("```"):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        plain = lines[index].strip() == "```"
        marked = index > 0 and MARKER.match(lines[index - 1]) is not None
        body = [line for line in lines[index + 1:end] if line.strip()]
        if plain and not marked and not all(line.startswith(COMMAND_PREFIXES) for line in body):
            found.append(index + 1)
        index = end + 1
    return found


def select(output: str, selections: Sequence[tuple[str, str]]) -> list[str]:
    """The lines of `output` that a block shows: each selection in turn, trailing spaces and blank ends removed."""
    lines = [line.rstrip() for line in output.rstrip().split("\n")]  # no blank last line for tail= to take
    for name, value in selections:
        if name == "from":
            pattern = re.compile(value)
            at = next((i for i, line in enumerate(lines) if pattern.search(line)), None)
            lines = [] if at is None else lines[at:]
        elif name == "until":
            pattern = re.compile(value)
            at = next((i for i, line in enumerate(lines) if i > 0 and pattern.search(line)), len(lines))
            lines = lines[:at]
        elif name == "grep":
            pattern = re.compile(value)
            lines = [line for line in lines if pattern.search(line)]
        elif name == "table":
            tables: list[list[str]] = []
            previous_row = False
            for line in lines:
                row = line.startswith("|")
                if row and not previous_row:
                    tables.append([])
                if row:
                    tables[-1].append(line)
                previous_row = row
            number = int(value)
            lines = tables[number - 1] if 1 <= number <= len(tables) else []
        elif name == "tail":
            lines = lines[-int(value):] if int(value) else []
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def comparable(line: str) -> str:
    """A line as compared: volatile tokens masked, thousands separators dropped, trailing spaces removed."""
    for pattern, mask in VOLATILE:
        line = pattern.sub(mask, line)
    return THOUSANDS.sub("", line).rstrip()


def run_command(command: str, root: Path = ROOT) -> tuple[int, str]:
    """Run a marker's command (`dsasim ...` as this Python's `-m dsasim.cli`; `python SCRIPT` with SCRIPT relative
    to `root`) in a fresh temporary folder, so that the files it writes land nowhere; (exit status, stdout)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from doc_blocks import argv_of  # (one rule for naming repository files: the command blocks')

    argv = argv_of(command, root)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH")))),
               COLUMNS="200", MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory(prefix="readme-figure-") as workdir:
        done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=env)
    return done.returncode, done.stdout


@dataclass(frozen=True)
class Outcome:
    """What checking one marker found: `ok`, `differs`, `failed` (wrong exit status) or `measured`."""

    figure: Figure
    status: str
    detail: str = ""
    new_block: tuple[str, ...] | None = None  # the block's lines as this run prints them (figures only)


def check_figure(figure: Figure, lines: Sequence[str], run: Callable[[str], tuple[int, str]]) -> Outcome:
    """Run one marker's command and compare its output with the README's block or paragraph."""
    if figure.kind == "measured":
        return Outcome(figure, "measured")
    status, output = run(figure.command)
    if status != figure.exit_status:
        return Outcome(figure, "failed", f"exit status {status}, expected {figure.exit_status}")
    block = list(lines[figure.block_start:figure.block_end])
    if figure.kind == "quote":
        paragraph, printed = comparable(" ".join(block)), comparable(output)
        missing = [q for q in figure.quoted if comparable(q) not in printed]
        unquoted = [q for q in figure.quoted if comparable(q) not in paragraph]
        if missing or unquoted:
            detail = "; ".join(filter(None, (missing and f"not printed any more: {', '.join(missing)}",
                                             unquoted and f"not in the paragraph: {', '.join(unquoted)}")))
            return Outcome(figure, "differs", detail)
        return Outcome(figure, "ok")
    shown = select(output, figure.selections)
    if not shown:
        return Outcome(figure, "failed", "the selection leaves no line of the output")
    new_block = [block[0], *shown, block[-1]] if figure.fenced else shown
    old = [comparable(line) for line in block]
    new = [comparable(line) for line in new_block]
    if old == new:
        return Outcome(figure, "ok", new_block=tuple(new_block))
    first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    was = block[first] if first < len(block) else "(nothing)"
    now = new_block[first] if first < len(new_block) else "(nothing)"
    detail = (f"line {figure.block_start + first + 1}: {figure.source} has {was.strip()!r}, the command prints "
              f"{now.strip()!r}")
    return Outcome(figure, "differs", detail, tuple(new_block))


def check_readme(text: str, *, slow: bool = False, only: Sequence[str] = (),
                 run: Callable[[str], tuple[int, str]] | None = None, source: str = "README",
                 printed: dict[str, tuple[int, str]] | None = None) -> tuple[list[Outcome], str]:
    """Check every selected marker of a markdown file's text; returns the outcomes and the text with each
    differing figure block rewritten (quotes and measured figures are never rewritten). `run` defaults to
    run_command; `printed` caches each command's output across files (pass one dict for several files)."""
    runner = run or run_command
    printed = {} if printed is None else printed  # a command runs once per check (fusion_table.py: two tables)

    def run(command: str) -> tuple[int, str]:
        if command not in printed:
            printed[command] = runner(command)
        return printed[command]

    lines = text.split("\n")
    outcomes = []
    for figure in find_figures(text, source):
        if figure.slow and not slow and figure.kind != "measured":
            continue
        if only and not any(s in figure.command for s in only):
            continue
        outcomes.append(check_figure(figure, lines, run))
    for outcome in sorted(outcomes, key=lambda o: -o.figure.block_start):  # from the end: ranges stay valid
        if outcome.status == "differs" and outcome.new_block is not None:
            lines[outcome.figure.block_start:outcome.figure.block_end] = outcome.new_block
    return outcomes, "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Check (default) or rewrite the figures of the README and docs/; print one line per marker and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report the figures that differ (the default)")
    mode.add_argument("--write", action="store_true", help="rewrite the figure blocks that differ")
    parser.add_argument("--slow", action="store_true", help="also the blocks marked slow (minutes)")
    parser.add_argument("--only", nargs="+", default=(), metavar="SUBSTRING", help="markers whose command has one")
    parser.add_argument("--list", action="store_true", help="list the markers and exit")
    parser.add_argument("--readme", type=Path, action="append", default=[], help="a file to check (old spelling of PATH)")
    parser.add_argument("paths", type=Path, nargs="*", metavar="PATH",
                        help="markdown files to check (default: README.md and docs/**/*.md)")
    args = parser.parse_args(argv)
    prog = "readme_figures"
    paths = [*args.readme, *args.paths] or doc_files()
    texts = {}
    for path in paths:
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            print(f"{prog}: cannot read {path}: {getattr(err, 'strerror', None) or err}", file=sys.stderr)
    if len(texts) < len(paths):
        return 2
    printed: dict[str, tuple[int, str]] = {}
    results = []
    try:
        for path, text in texts.items():
            name = label(path)
            if args.list:
                for figure in find_figures(text, name):
                    slow = " (slow)" if figure.slow else ""
                    print(f"{name} line {figure.marker_line + 1}: {figure.kind}{slow}: {figure.command}")
                continue
            outcomes, new_text = check_readme(text, slow=args.slow, only=args.only, source=name, printed=printed)
            results.append((path, name, text, outcomes, new_text, unmarked_output_blocks(text)))
    except MarkerError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    if args.list:
        return 0
    every: list[Outcome] = []
    unmarked_any = False
    for path, name, text, outcomes, new_text, unmarked in results:
        every += outcomes
        for outcome in outcomes:
            detail = f" -- {outcome.detail}" if outcome.detail else ""
            print(f"{outcome.status:8s} {name} line {outcome.figure.marker_line + 1}: {outcome.figure.command}{detail}")
        if args.write and new_text != text:
            from dsasim.atomic import write_text_atomic

            write_text_atomic(path, new_text)
            print(f"rewrote the differing figure blocks of {name}")
        for line in unmarked:
            print(f"unmarked {name} line {line}: an output block with no <!-- figure: COMMAND --> marker before it")
        unmarked_any = unmarked_any or bool(unmarked)
    bad = [o for o in every if o.status == "failed" or (o.status == "differs" and not args.write)]
    unfixable = [o for o in every if o.status == "differs" and args.write and o.new_block is None]
    counts = {s: sum(o.status == s for o in every) for s in ("ok", "differs", "failed", "measured")}
    print(", ".join(f"{n} {s}" for s, n in counts.items()) + ("" if args.slow else "; slow blocks skipped (--slow)"))
    return 1 if bad or unfixable or unmarked_any else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
