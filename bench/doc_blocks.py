"""Every code block of the README and docs/ runs: commands are run, Python is executed, TOML is loaded as hardware.

    python bench/doc_blocks.py [--slow] [--only SUBSTRING ...] [--list] [PATH ...]

PATH: markdown files (default: README.md and every docs/**/*.md). Each ``` fenced block is one of:

* an **output block**: right after a `<!-- figure ...: COMMAND -->` marker; `bench/readme_figures.py` compares it
  with what COMMAND prints (not run here);
* **commands** (a fence with no language, or `sh`/`bash`/`shell`): every line (joined at a trailing `\\`) runs a
  program of this project: `dsasim ...` (or `.venv/bin/dsasim ...`, run as `python -m dsasim.cli ...`; an argument
  naming a file of the repository, such as `tests/data/zigzag/small_gemm.yaml`, is given by its absolute path) or
  `python ...` (`python3`, `.venv/bin/python`: this Python); each must exit 0, or N with `<!-- run exit=N -->`;
* **Python** (```` ```python ````): executed as a script;
* **TOML** (```` ```toml ````): loaded as a hardware file (`dsasim.hardware.from_toml`);
* a copy of a file: after `<!-- file: PATH -->`, the block must equal the repository's file PATH (an example in
  examples/, run with its expected output by tests/test_docs_examples.py);
* **not run**: after `<!-- norun: REASON -->`, the reason saying why (an install command, a fragment, a server).

Anything else is an error: a block nobody runs is a block that can drift. Everything runs in a fresh temporary
folder (so written files go nowhere), with this repository first on PYTHONPATH and matplotlib's Agg backend.
`<!-- run slow -->` before a commands or Python block: run only with `--slow` (minutes; by hand, as the slow
figures). A marker sits on the line right before the fence.

Exit status: 0 every block ran as it should; 1 some failed; 2 a block no rule covers, or a malformed marker (one
line on stderr naming the file and line).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from readme_figures import MARKER as FIGURE, ROOT, doc_files, label  # noqa: E402  (the figures' own checker)

MARKER = re.compile(r"^<!--\s*(norun|run|file)\b(.*?)-->\s*$")
FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
COMMAND_LANGUAGES = frozenset({"", "sh", "bash", "shell"})
PROGRAMS = {"dsasim": "dsasim", ".venv/bin/dsasim": "dsasim", "python": "python", "python3": "python",
            ".venv/bin/python": "python"}
BLOCK_TIMEOUT_S = 1800


class BlockError(Exception):
    """A block that no rule covers, or a marker that cannot be followed (exit status 2)."""


@dataclass(frozen=True)
class Block:
    """One fenced code block of a markdown file and what is to be done with it."""

    source: str  # the file's name in messages
    line: int  # 1-based line of the opening fence
    language: str
    body: str
    kind: str  # figure | commands | python | toml | file | norun
    slow: bool = False
    exit_status: int = 0
    reason: str = ""  # norun: why
    file: str = ""  # file: the repository path the block copies

    @property
    def where(self) -> str:
        """`FILE line N`, as messages name a block."""
        return f"{self.source} line {self.line}"


def command_lines(body: str) -> list[str]:
    """The commands of a block: its lines joined at trailing backslashes, blank lines and comments dropped."""
    joined, pending = [], ""
    for line in body.split("\n"):
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip() and not line.lstrip().startswith("#"):
            joined.append(line.strip())
    if pending.strip():
        joined.append(pending.strip())
    return joined


def _is_command(line: str) -> bool:
    """Whether a line runs a program of this project (dsasim or this Python), whole: no pipes, no `&&`."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return False
    return bool(words) and words[0] in PROGRAMS and not {"|", "&&", ";", ">", "<"} & set(words)


def _parse_marker(line: str, where: str) -> tuple[str, dict[str, str]]:
    """A run/norun/file marker's kind and attributes; BlockError when malformed."""
    match = MARKER.match(line)
    assert match is not None
    kind, rest = match.group(1), match.group(2).strip()
    if kind == "norun":
        reason = rest[1:].strip() if rest.startswith(":") else ""
        if not reason:
            raise BlockError(f"{where}: a norun marker says why: <!-- norun: REASON -->")
        return kind, {"reason": reason}
    if kind == "file":
        path = rest[1:].strip() if rest.startswith(":") else ""
        if not path:
            raise BlockError(f"{where}: a file marker names the file: <!-- file: examples/NAME.py -->")
        return kind, {"file": path}
    attributes = {}
    for token in rest.split():
        name, eq, value = token.partition("=")
        if token == "slow":
            attributes["slow"] = "1"
        elif eq and name == "exit" and value.isdigit():
            attributes["exit"] = value
        else:
            raise BlockError(f"{where}: unknown run attribute {token!r}; allowed: slow, exit=N")
    return kind, attributes


def find_blocks(text: str, source: str = "README") -> list[Block]:
    """Every fenced block of a markdown file's text, classified; BlockError for the first one no rule covers."""
    lines = text.split("\n")
    blocks, index = [], 0
    while index < len(lines):
        stripped = lines[index].lstrip(" ")
        if not stripped.startswith("```"):
            index += 1
            continue
        indent = len(lines[index]) - len(stripped)  # a fence inside a list item is indented with it
        where = f"{source} line {index + 1}"
        fence = FENCE.match(stripped)
        if fence is None:
            raise BlockError(f"{where}: a fence's language is one word (```python, ```toml, ```sh), got "
                             f"{lines[index]!r}")
        end = index + 1
        while end < len(lines) and not lines[end].lstrip(" ").startswith("```"):
            end += 1
        if end == len(lines):
            raise BlockError(f"{where}: a ``` fence is never closed")
        language = fence.group(1)
        body = "\n".join(line[indent:] if not line[:indent].strip() else line.lstrip(" ")
                         for line in lines[index + 1:end]) + "\n"
        before = lines[index - 1].strip() if index else ""
        blocks.append(_classify(source, index + 1, language, body, before, where))
        index = end + 1
    return blocks


def _classify(source: str, line: int, language: str, body: str, before: str, where: str) -> Block:
    """What is to be done with one block, from its marker (the line before its fence) and its language."""
    if FIGURE.match(before):
        return Block(source, line, language, body, "figure")
    kind, attributes = _parse_marker(before, where) if MARKER.match(before) else ("", {})
    if kind == "norun":
        return Block(source, line, language, body, "norun", reason=attributes["reason"])
    if kind == "file":
        return Block(source, line, language, body, "file", file=attributes["file"])
    slow, exit_status = "slow" in attributes, int(attributes.get("exit", "0"))
    if language == "python":
        if exit_status:
            raise BlockError(f"{where}: exit=N applies to commands; a Python block must run cleanly")
        return Block(source, line, language, body, "python", slow=slow)
    if language == "toml":
        if attributes:
            raise BlockError(f"{where}: a TOML block is loaded, not run: no run attributes")
        return Block(source, line, language, body, "toml")
    if language in COMMAND_LANGUAGES:
        commands = command_lines(body)
        strangers = [c for c in commands if not _is_command(c)]
        if commands and not strangers:
            return Block(source, line, language, body, "commands", slow=slow, exit_status=exit_status)
        what = f"{strangers[0]!r} is not a dsasim or python command" if strangers else "it holds no command"
        raise BlockError(f"{where}: {what}; mark the block <!-- norun: REASON --> if it must not run, or put "
                         f"<!-- figure: COMMAND --> before an output block")
    raise BlockError(f"{where}: a ```{language} block is neither run nor marked <!-- norun: REASON -->")


def _environment(root: Path) -> dict[str, str]:
    """The environment blocks run in: this repository first on the path, no display, wide tables."""
    path = os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH"))))
    return dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", COLUMNS="200")


def _repository_file(word: str, root: Path) -> str:
    """A dsasim argument naming a file of the repository (`tests/data/zigzag/small_gemm.yaml`, or a Python file
    and a name in it: `examples/network_levels.py:TwoLinear`) with the file's absolute path, since the block runs
    in a temporary folder; any other argument as it is."""
    if word.startswith("-") or "/" not in word:
        return word
    if (root / word).is_file():
        return str(root / word)
    file, colon, name = word.rpartition(":")
    if colon and file.endswith(".py") and (root / file).is_file():
        return f"{root / file}:{name}"
    return word


def argv_of(command: str, root: Path = ROOT) -> list[str]:
    """A command line as this Python runs it: dsasim as `-m dsasim.cli` (an argument naming a file of the
    repository by its absolute path); a script of the repository by its path."""
    words = shlex.split(command, comments=True)
    if PROGRAMS[words[0]] == "dsasim":
        return [sys.executable, "-m", "dsasim.cli", *(_repository_file(w, root) for w in words[1:])]
    args = words[1:]
    if args and not args[0].startswith("-") and (root / args[0]).is_file():
        args[0] = str(root / args[0])
    return [sys.executable, *args]


def run_block(block: Block, workdir: Path, root: Path = ROOT) -> tuple[bool, str]:
    """Run one block in `workdir`; (whether it did what it should, what went wrong)."""
    env = _environment(root)
    if block.kind == "commands":
        for command in command_lines(block.body):
            done = subprocess.run(argv_of(command, root), cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=BLOCK_TIMEOUT_S)
            if done.returncode != block.exit_status:
                said = (done.stderr.strip() or done.stdout.strip()).split("\n")[-1:]
                return False, f"{command}: exit status {done.returncode}, expected {block.exit_status}: {said[0] if said else ''}"
        return True, ""
    if block.kind == "python":
        script = workdir / "block.py"
        script.write_text(block.body, encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], cwd=workdir, env=env, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT_S)
        if done.returncode:
            return False, f"the Python block raised: {(done.stderr.strip().split(chr(10)) or [''])[-1]}"
        return True, ""
    if block.kind == "toml":
        from dsasim.hardware import from_toml

        path = workdir / "hardware.toml"
        path.write_text(block.body, encoding="utf-8")
        try:
            from_toml(path)
        except ValueError as err:
            return False, f"the TOML block is no hardware file: {err}"
        return True, ""
    if block.kind == "file":
        copied = root / block.file
        if not copied.is_file():
            return False, f"the block copies {block.file}, which does not exist"
        if copied.read_text(encoding="utf-8") != block.body:
            return False, f"the block differs from {block.file}: copy the file into it again"
        return True, ""
    return True, ""  # figure (bench/readme_figures.py) and norun


def runnable(block: Block, slow: bool) -> bool:
    """Whether a check runs the block: everything but output blocks and norun ones, slow ones with --slow."""
    return block.kind not in ("figure", "norun") and (slow or not block.slow)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every block of the README and docs/ (or of PATHs); one line per block and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slow", action="store_true", help="also the blocks marked slow (minutes)")
    parser.add_argument("--only", nargs="+", default=(), metavar="SUBSTRING", help="blocks whose text has one")
    parser.add_argument("--list", action="store_true", help="list the blocks and what is done with each")
    parser.add_argument("paths", type=Path, nargs="*", metavar="PATH", help="markdown files (default: all)")
    args = parser.parse_args(argv)
    prog = "doc_blocks"
    blocks: list[Block] = []
    for path in args.paths or doc_files():
        try:
            text = path.read_text(encoding="utf-8")
            blocks += find_blocks(text, label(path))
        except (OSError, UnicodeDecodeError) as err:
            print(f"{prog}: cannot read {path}: {getattr(err, 'strerror', None) or err}", file=sys.stderr)
            return 2
        except BlockError as err:
            print(f"{prog}: {err}", file=sys.stderr)
            return 2
    failed = ran = 0
    for block in blocks:
        if args.only and not any(s in block.body for s in args.only):
            continue
        what = block.kind + (" (slow)" if block.slow else "") + (f": {block.reason}" if block.reason else "")
        if args.list or not runnable(block, args.slow):
            status = "listed" if args.list else ("skipped" if block.slow else block.kind)
            print(f"{status:8s} {block.where}: {what}")
            continue
        with tempfile.TemporaryDirectory(prefix="doc-block-") as workdir:
            ok, detail = run_block(block, Path(workdir))
        ran += 1
        failed += not ok
        print(f"{'ok' if ok else 'failed':8s} {block.where}: {what}" + (f" -- {detail}" if detail else ""))
    if not args.list:
        print(f"{ran - failed} ok, {failed} failed" + ("" if args.slow else "; slow blocks skipped (--slow)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
