"""Lay dsasim/architect/ out as the data flow: problems <- nests <- model <- search <- studies.

    python bench/relayout.py [--dry-run]

Moves every module of dsasim/architect/ into the subpackage `HOME` names for it (`git mv`, so history follows), gives
each subpackage an `__init__.py` with a one-line docstring (no re-exports: imports stay lazy and the layering test
sees the real edges), and rewrites every reference to a moved module in the tracked text files:

* dotted paths `dsasim.architect.X` (imports, `import_module` and `monkeypatch` strings, the lazy map of
  dsasim/__init__.py, entry points, docstrings, docs), except where the text already names the new layout;
* file paths `dsasim/architect/X.py` (bench/mutation.py's `path=`, docs, tests);
* `from dsasim.architect import X[ as Y][, ...]` (split per subpackage, each name keeping its local binding);
* relative imports (`from . import X`, `from .X import Y`, `from ..util import Z`) in or into the moved modules,
  made absolute (the project writes absolute imports only: tests/test_layering.py).

`HOME` below is the one place to edit. The script refuses (exit 2, one line on stderr) when the tree is dirty, when
a module of dsasim/architect/ is not in `HOME` (add it: a new module needs a home), when a reference cannot be
rewritten mechanically (a module path built at run time: `"dsasim.architect." + name`, `f"dsasim.architect.{m}"`,
`from dsasim import architect`; spell the full dotted path instead) or when an old path occurs in a tracked text
file of a kind it does not rewrite. `--dry-run` prints the moves and the count of rewritten references per file and
changes nothing. On an already laid-out tree it says so and exits 0. Deterministic: files and modules are walked in
sorted order, and the same tree gives the same result.

Pickled work (the process pool and Dask executors send functions by module path) needs nothing more: worker and
parent import the same moved modules. No shims stay at the old paths: the public API is `dsasim.__all__` (its lazy
map is rewritten here), and nothing outside the repository imports architect modules by path.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "dsasim.architect"
FOLDER = "dsasim/architect"

# The subpackages, lowest first (each may import only its own and the ones before it: tests/test_layering.py), and
# what lives in each (its __init__.py docstring).
SUBPACKAGES: dict[str, str] = {
    "problems": "What is computed: layers, chains of layers and their catalogue, as data (no schedule, no model).",
    "nests": "How a problem is scheduled: loop nests as data.",
    "model": "Closed forms: the traffic, cycles and SRAM of a nest and the lower bounds of any schedule; no search.",
    "search": "Which schedule is best: objectives, the searches of layers, levels and chains, their spaces.",
    "studies": "Many searches: SRAM sweeps, whole networks, dynamic shapes, and the executors that run them.",
}

# MODULE -> "SUBPACKAGE" or "SUBPACKAGE/NEW_NAME". A file that holds several concepts sits with the highest of them
# until it is split (see the report of issue 27: loopnest = problem + nest, fused and hierarchy = nest + model,
# gemm_chain = problem + parser + nest + model + space). Entries for modules not (or no longer) present are skipped
# with a note, so the table can name modules of branches not yet merged.
HOME: dict[str, str] = {
    # problems: what is computed
    "layers": "problems",            # built-in layers by name, the layer-spec parser
    "chain": "problems",             # ConvChain
    "chain_catalogue": "problems",   # chain presets, parse_chain
    # nests: how it is scheduled
    "loopnest": "nests",             # LoopNest (and, until split, the problems ConvProblem / MatmulProblem)
    # model: closed forms
    "analytic": "model",             # analyze, reconcile, the capacity rule
    "lower_bounds": "model",
    "fused_analysis": "model",       # FusedAnalysis, the figures every fused chain kind reports
    "fused": "model",                # analyze_fused (and, until split, FusedNest)
    "hierarchy": "model",            # the per-level model (and, until split, LevelNest)
    # search: which schedule is best
    "objective": "search",
    "search": "search/layer_search",  # a layer's search; renamed: the subpackage itself is `search`
    "level_search": "search",
    "fused_space": "search",         # a conv chain's fused space, evaluated at once, and its best
    "fused_search": "search",        # search_chain
    "chain_kind": "search",          # the Chain interface the chain search reads
    "chain_kinds": "search",         # the registry CHAIN_KINDS
    "gemm_chain": "search",          # GemmChainSpace (and, until split, GemmChain, its nest and model)
    # studies: many searches, all over targets
    "target": "studies",             # Target, Choice, SearchOptions: what search, sweeps and networks take
    "target_kinds": "studies",       # the registry TARGET_KINDS, target_of
    "layer_target": "studies",       # one adapter per target kind (its search, sweep, JSON)
    "level_target": "studies",
    "chain_target": "studies",
    "target_figures": "studies",     # the figures a network keeps of a target's choice, and its one executor task
    "target_sweep": "studies",       # TargetSweep: the one result of every kind's SRAM sweep
    "sweep": "studies",              # SRAM sweeps of a layer or chain
    "network": "studies",            # the torch.fx import of a network
    "network_models": "studies",     # the preset networks
    "network_eval": "studies",       # a network per hardware and SRAM size
    "shapes": "studies",             # dynamic shapes
    "executor": "studies",           # in process, process pool, Dask
    "timeloop": "studies",           # Timeloop YAML in and out
}

# the tracked files rewritten; any other tracked text file that names an old path is refused
REWRITTEN_SUFFIXES = (".py", ".pyx", ".pxd", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".ini", ".rst")
# a module path built at run time: the script cannot know which module it names
DYNAMIC = re.compile(r"""dsasim[./]architect[./](?=["'{])|from\s+dsasim\s+import\s+(\(\s*)?([\w\s,]*\b)?architect\b""")
DOTTED = re.compile(r"(?<![\w.])dsasim\.architect\.(\w+)")
PATH = re.compile(r"(?<![\w/])dsasim/architect/(\w+)\.py\b")


class Refusal(Exception):
    """A reason not to touch the tree (printed as one line, exit 2)."""


@dataclass(frozen=True)
class Move:
    """One module's move: `old` and `new` are its names relative to dsasim.architect (`search`, `search.layer_search`)."""

    old: str
    new: str

    @property
    def subpackage(self) -> str:
        """The subpackage it moves into."""
        return self.new.split(".")[0]

    @property
    def old_path(self) -> str:
        """Its file before the move, relative to the repository root."""
        return f"{FOLDER}/{self.old}.py"

    @property
    def new_path(self) -> str:
        """Its file after the move, relative to the repository root."""
        return f"{FOLDER}/{self.new.replace('.', '/')}.py"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def plan_moves(modules: list[str]) -> tuple[list[Move], list[str]]:
    """The moves for the modules present (sorted), and the table entries with no module (to note)."""
    unknown = sorted(set(modules) - set(HOME))
    if unknown:
        raise Refusal(f"modules of {FOLDER}/ with no home in HOME: {', '.join(unknown)} (add each to HOME in "
                      f"bench/relayout.py: one of {', '.join(SUBPACKAGES)})")
    moves = []
    for module in sorted(modules):
        home = HOME[module]
        subpackage, _, name = home.partition("/")
        if subpackage not in SUBPACKAGES:
            raise Refusal(f"HOME[{module!r}] = {home!r}: {subpackage!r} is not a subpackage ({', '.join(SUBPACKAGES)})")
        moves.append(Move(module, f"{subpackage}.{name or module}"))
    news = [m.new for m in moves]
    if len(set(news)) != len(news):
        raise Refusal(f"two modules would move to the same place: {sorted(n for n in news if news.count(n) > 1)}")
    return moves, sorted(set(HOME) - set(modules))


class Rewriter:
    """Rewrites the references to moved modules in one file's text; counts them."""

    def __init__(self, moves: list[Move]):
        self.by_old = {m.old: m for m in moves}
        # names that, after `dsasim.architect.SUBPACKAGE.`, already mean the new layout (so `search.layer_search`
        # is never read as the old module `search` followed by an attribute)
        self.members = {s: {m.new.split(".")[1] for m in moves if m.subpackage == s} for s in SUBPACKAGES}

    def _dotted(self, match: re.Match[str]) -> str | None:
        name = match.group(1)
        move = self.by_old.get(name)
        if move is None:
            return None
        # `dsasim.architect.search.layer_search`, `from dsasim.architect.search import level_search`: the new layout
        rest = re.match(r"(?:\.|\s+import\s+\(?\s*)(\w+)", match.string[match.end():])
        if name in self.members and rest and rest.group(1) in self.members[name]:
            return None
        return f"{PACKAGE}.{move.new}"

    def _path(self, match: re.Match[str]) -> str | None:
        move = self.by_old.get(match.group(1))
        return None if move is None else move.new_path

    def old_references(self, text: str) -> int:
        """How many references to the old layout `text` holds (dotted and file paths)."""
        return (sum(self._dotted(m) is not None for m in DOTTED.finditer(text))
                + sum(self._path(m) is not None for m in PATH.finditer(text)))

    def text(self, text: str, path: str) -> tuple[str, int]:
        """The rewritten text of the file at `path` (relative to the root) and the number of references changed."""
        count = 0

        def sub(pattern: re.Pattern[str], fn, text: str) -> str:
            nonlocal count

            def one(match: re.Match[str]) -> str:
                nonlocal count
                new = fn(match)
                if new is None:
                    return match.group(0)
                count += 1
                return new
            return pattern.sub(one, text)

        text = sub(DOTTED, self._dotted, text)
        text = sub(PATH, self._path, text)
        if path.endswith(".py"):
            text, n = self._imports(text, path)
            count += n
        return text, count

    def _module_of(self, path: str) -> tuple[str, bool]:
        """The dotted package a .py file sits in (before the move) and whether it is a package's __init__."""
        parts = Path(path).with_suffix("").parts
        if parts[0] == "kernels":
            parts = ("dsasim",) + parts
        return ".".join(parts[:-1]), parts[-1] == "__init__"

    def _imports(self, text: str, path: str) -> tuple[str, int]:
        """`from dsasim.architect import X` forms and relative imports, rewritten through the syntax tree."""
        try:
            tree = ast.parse(text)
        except SyntaxError as error:
            raise Refusal(f"{path}:{error.lineno}: does not parse, so its imports cannot be rewritten: {error.msg}")
        package, _ = self._module_of(path)
        moved_file = path.startswith(FOLDER + "/") and Path(path).stem in self.by_old
        lines = text.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        edits = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                absolute = ".".join(base + ([node.module] if node.module else []))
                names = [a.name for a in node.names]
                touches = absolute == PACKAGE or absolute.startswith(PACKAGE + ".") or moved_file
                if not touches:
                    continue
                node_module = absolute
            else:
                node_module = node.module or ""
                names = [a.name for a in node.names]
            if node_module == PACKAGE and any(n in self.by_old for n in names):
                statements = self._split(node)
            elif node.level:
                module = node_module
                head = module.split(".")
                if module.startswith(PACKAGE + ".") and head[2] in self.by_old:
                    module = ".".join([*PACKAGE.split("."), *self.by_old[head[2]].new.split("."), *head[3:]])
                statements = [f"from {module} import {', '.join(self._alias(a) for a in node.names)}"]
            else:
                continue
            indent = " " * node.col_offset
            start = offsets[node.lineno - 1] + node.col_offset
            end = offsets[node.end_lineno - 1] + node.end_col_offset
            edits.append((start, end, f"\n{indent}".join(statements)))
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        return text, len(edits)

    @staticmethod
    def _alias(alias: ast.alias) -> str:
        return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"

    def _split(self, node: ast.ImportFrom) -> list[str]:
        """`from dsasim.architect import a, b as c` as one import per subpackage, each name bound as before."""
        groups: dict[str, list[str]] = {}
        for alias in node.names:
            move = self.by_old.get(alias.name)
            if move is None:
                groups.setdefault(PACKAGE, []).append(self._alias(alias))
                continue
            subpackage, name = move.new.split(".")
            bound = alias.asname or alias.name
            groups.setdefault(f"{PACKAGE}.{subpackage}", []).append(name if name == bound else f"{name} as {bound}")
        return [f"from {module} import {', '.join(names)}" for module, names in groups.items()]


def _tracked_text_files() -> list[str]:
    files = []
    for name in sorted(_git("ls-files", "-z").split("\0")):
        path = ROOT / name
        if not name or path.is_symlink() or not path.is_file():
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        files.append(name)
    return files


def relayout(dry_run: bool) -> int:
    """Plan, check, and (unless `dry_run`) carry out the move; prints what it does. Exit status."""
    folder = ROOT / FOLDER
    modules = sorted(p.stem for p in folder.glob("*.py") if p.name != "__init__.py")
    present = sorted(s for s in SUBPACKAGES if (folder / s).exists())
    if not modules and present:
        print(f"{FOLDER}/ is already laid out ({', '.join(present)}); nothing to do")
        return 0
    if present:
        raise Refusal(f"{FOLDER}/ holds both flat modules and subpackages ({', '.join(present)}): a half-done move; "
                      f"reset the tree (git checkout/clean) and run again")
    dirty = _git("status", "--porcelain", "--untracked-files=all")
    if dirty and not dry_run:
        raise Refusal(f"the working tree is dirty ({len(dirty.splitlines())} paths; see git status): commit or "
                      f"stash first, so the move is one reviewable change")
    moves, absent = plan_moves(modules)
    rewriter = Rewriter(moves)
    rewrites: dict[str, tuple[str, int]] = {}
    dynamic, foreign = [], []
    for name in _tracked_text_files():
        text = (ROOT / name).read_text(encoding="utf-8")
        if name == "bench/relayout.py":
            continue  # this script names the old layout on purpose
        for number, line in enumerate(text.splitlines(), 1):
            if DYNAMIC.search(line):
                dynamic.append(f"{name}:{number}")
        if not name.endswith(REWRITTEN_SUFFIXES):
            if rewriter.old_references(text):
                foreign.append(name)
            continue
        new, count = rewriter.text(text, name)
        if count:
            rewrites[name] = (new, count)
    if dynamic:
        raise Refusal(f"module paths built at run time, which no rewrite can follow (spell the full dotted path "
                      f"instead): {', '.join(dynamic)}")
    if foreign:
        raise Refusal(f"old module paths in files of a kind this script does not rewrite: {', '.join(foreign)} "
                      f"(add the suffix to REWRITTEN_SUFFIXES or fix them by hand first)")
    if dirty:
        print(f"note: the working tree is dirty ({len(dirty.splitlines())} paths): a real run would refuse")
    for entry in absent:
        print(f"note: HOME names {entry!r}, which {FOLDER}/ does not hold: skipped")
    for move in moves:
        print(f"move {move.old_path} -> {move.new_path}")
    for subpackage in SUBPACKAGES:
        print(f"new  {FOLDER}/{subpackage}/__init__.py")
    for name, (_, count) in rewrites.items():
        print(f"rewrite {name}: {count} reference{'s' if count != 1 else ''}")
    total = sum(count for _, count in rewrites.values())
    print(f"{len(moves)} modules moved, {total} references rewritten in {len(rewrites)} files"
          + (" (dry run: nothing changed)" if dry_run else ""))
    if dry_run:
        return 0
    for name, (new, _) in rewrites.items():
        (ROOT / name).write_text(new, encoding="utf-8")
    for subpackage, what in SUBPACKAGES.items():
        init = folder / subpackage / "__init__.py"
        init.parent.mkdir()
        init.write_text(f'"""{what}"""\n', encoding="utf-8")
    for move in moves:
        _git("mv", move.old_path, move.new_path)
    _git("add", "--", *(f"{FOLDER}/{s}/__init__.py" for s in SUBPACKAGES))
    left = [name for name in _tracked_text_files() if name != "bench/relayout.py"
            and rewriter.old_references((ROOT / name).read_text(encoding="utf-8"))]
    if left:
        print(f"relayout: old module paths left after the rewrite in {', '.join(left)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the move (or print it with --dry-run); exit 0 done, 1 references left behind, 2 refused."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the moves and rewrites; change nothing")
    args = parser.parse_args(argv)
    try:
        return relayout(args.dry_run)
    except Refusal as refusal:
        print(f"relayout: {refusal}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
