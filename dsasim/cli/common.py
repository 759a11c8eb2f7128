"""What every subcommand shares: the command record of the registry, the error contract, argument types,
output-path checks and the schedule lookup. Imports nothing heavy: building the parser (`dsasim --help`) must
stay fast, so each command imports its model (torch, matplotlib, the search) inside its run function.

The error contract (`dsasim.cli.main` applies it):

* A mistake in the command line (unknown name, bad number or size, unusable path, bad hardware file) raises
  `CliError`; `main` prints one line `dsasim COMMAND: what is wrong (how to fix it)` on stderr and exits 2.
  argparse's own errors take the same one-line form (`DsasimArgumentParser.error`).
* Output paths are checked by `output_file` / `output_dir` before any expensive work, and written atomically
  (`dsasim.atomic`). Every command passes all its outputs (a `--plot DIR`: each file it will write) and its
  inputs (`--hardware FILE`, user modules) to `check_outputs` first: no output may be another or an input.
* Ctrl-C exits 130 with `dsasim COMMAND: interrupted`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

from dsasim.atomic import probe_writable, write_text_atomic

if TYPE_CHECKING:
    from dsasim.traced.schedule import Schedule

__all__ = ["Command", "CliError", "DsasimArgumentParser", "all_schedules", "check_distinct_files", "check_outputs",
           "find_schedule", "find_schedules", "html_output_path", "HTML_SUFFIXES", "import_kernel", "int_at_least",
           "kernel_runner", "output_dir", "output_file",
           "plot_dir_outputs", "PLOT_SUFFIXES", "warner"]

EXIT_FAILED = 1  # the command ran, but what it ran failed (a schedule error, an overflow under simulate, no fit)
EXIT_USAGE = 2  # a mistake in the command line: nothing was run, or nothing was written
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, the shell's convention)
PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".eps", ".ps")  # matplotlib's
HTML_SUFFIXES = (".html", ".htm")


class CliError(Exception):
    """A mistake in the command line; its message says what is wrong and how to fix it (exit status 2)."""


@dataclass(frozen=True)
class Command:
    """One subcommand of the registry: its name and help, how to add its arguments, and its handler.

    `run(args) -> exit status` imports the command's model itself; a mistake in the command line raises
    CliError."""

    name: str
    help: str
    description: str | None
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]

    def __post_init__(self) -> None:
        if not self.name or not self.help:
            raise ValueError(f"a command needs a name and a help line, got {self.name!r}, {self.help!r}")


class DsasimArgumentParser(argparse.ArgumentParser):
    """argparse with dsasim's one-line errors: `dsasim COMMAND: MESSAGE (see dsasim COMMAND --help)`."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """As argparse's, but an unrecognized argument is reported under the subcommand it was given to."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(parsed, "command", None)
            prog = f"{self.prog} {command}" if command else self.prog
            self.exit(EXIT_USAGE, f"{prog}: unrecognized arguments: {' '.join(extra)} (see `{prog} --help`)\n")
        return parsed


def add_objective_argument(p: argparse.ArgumentParser, default: str | None, scope: str = "",
                           note: str = "") -> None:
    """The --objective option: its choices and help from the registry `dsasim.architect.search.objective.OBJECTIVES`
    (a name outside it: argparse's exit 2 listing the choices); `scope` opens the help, `note` ends it; the help
    names `default` (None: the searches' DEFAULT_OBJECTIVE)."""
    from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, OBJECTIVES, describe_objectives

    p.add_argument("--objective", choices=tuple(OBJECTIVES), default=default,
                   help=f"{scope}the best schedule by one of: {describe_objectives()} "
                        f"(default: {default or DEFAULT_OBJECTIVE.name})"
                        f"{note}")


def int_at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high]; the message names the range and what was given."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            allowed = f"a whole number >= {low}" if high is None else f"a whole number from {low} to {high:,}"
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            allowed = f">= {low}" if high is None else f"from {low} to {high:,}"
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text}")
        return value
    return parse


def json_and_plot_paths(args: Any) -> tuple[Path | None, Path | None]:
    """The checked --json and --plot paths of a command (None where not asked for); CliError when one is not
    writable, both name the same file, or one names an input (`check_outputs`)."""
    check_outputs(args, [("--json", args.json), ("--plot", args.plot)])
    json_path = output_file("--json", args.json) if args.json is not None else None
    plot_path = output_file("--plot", args.plot, PLOT_SUFFIXES) if args.plot is not None else None
    return json_path, plot_path


FileUse = tuple[str, "str | Path | None"]  # (what names the file, for messages: "--json"; its path, None: not given)


def _file_identity(path: str | Path) -> tuple:
    """What makes two paths the same file: device and inode for a file that exists (links, hard links), else its
    resolved absolute path (`./x` and `x`, a link to a folder on the way)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return ("path", os.path.normcase(real))
    return ("inode", st.st_dev, st.st_ino)


def check_distinct_files(outputs: Sequence[FileUse], inputs: Sequence[FileUse] = ()) -> None:
    """CliError, before any work, when two outputs are the same file or an output is one of the inputs.

    Each entry is (what names it, its path); a None path is skipped. A `--plot DIR` contributes one entry per file
    it will write (see `plot_dir_outputs`)."""
    seen: dict[tuple, tuple[str, str]] = {}
    for label, path in inputs:
        if path is not None:
            seen.setdefault(_file_identity(path), (label, str(path)))
    read = set(seen)
    for label, path in outputs:
        if path is None:
            continue
        key = _file_identity(path)
        if key in seen:
            other, other_path = seen[key]
            same = f"{path}" if str(path) == other_path else f"{path} (the same file as {other_path})"
            if key in read:
                raise CliError(f"{label} {same} is {other}, which this command reads: writing it would destroy "
                               f"that input; give another output path")
            raise CliError(f"{other} and {label} both name {same}; give each output its own file")
        seen[key] = (label, str(path))


def plot_dir_outputs(flag: str, folder: str | None, names: Sequence[str]) -> list[FileUse]:
    """The files a `--plot DIR` will write (`names` inside `folder`), labelled for `check_distinct_files`."""
    if folder is None:
        return []
    return [(f"{flag} {folder} (its {name})", Path(folder) / name) for name in names]


def command_inputs(args: Any) -> list[FileUse]:
    """The files a command reads that its options name: a `--hardware` TOML file (each of a comma-separated
    list), a `MODULE:ATTR` / `FILE.py:ATTR` network's source file."""
    from dsasim.hardware import PRESETS
    from dsasim.user_code import is_user_spec, module_file

    found: list[FileUse] = []
    hardware = getattr(args, "hardware", None)
    if isinstance(hardware, str) and hardware.strip():
        parts = [hardware] if os.path.exists(hardware) else [h.strip() for h in hardware.split(",")]
        found += [("the --hardware file", part) for part in parts if part and part not in PRESETS]
    spec = getattr(args, "network", None)
    if isinstance(spec, str) and is_user_spec(spec):
        found.append((f"the source of network {spec}", module_file(spec)))
    return found


def check_outputs(args: Any, outputs: Sequence[FileUse], inputs: Sequence[FileUse] = ()) -> None:
    """The shared collision check of every command: `check_distinct_files` of its outputs against each other
    and against its inputs (those `command_inputs` finds in `args`, and `inputs`). Call it before any work."""
    check_distinct_files(outputs, [*command_inputs(args), *inputs])


def html_output_path(args: Any, others: Sequence[FileUse]) -> Path | None:
    """The checked --html path of a command (None where not asked for); CliError when it is not writable, does not
    end in .html or .htm, or names another output (`others`) or an input (`check_outputs`)."""
    if getattr(args, "html", None) is None:
        return None
    check_outputs(args, [*others, ("--html", args.html)])
    return output_file("--html", args.html, HTML_SUFFIXES)


def write_outputs(result: Any, json_path: Path | None, plot_path: Path | None, plot: str) -> None:
    """`result.to_json()` to json_path and `dsasim.view.plot.<plot>(result, plot_path)`, each written atomically
    when asked for (matplotlib is imported only for a plot)."""
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(result.to_json(), indent=2) + "\n")
    if plot_path is not None:
        from dsasim.view import plot as plots

        getattr(plots, plot)(result, plot_path)


def output_file(flag: str, text: str, suffixes: tuple[str, ...] = ()) -> Path:
    """Check, before any work, that `text` can be written as an output file: its folder exists and takes new
    files, it is not a folder itself, and its suffix is one of `suffixes` (when given). Raises CliError."""
    if not text.strip():
        raise CliError(f"{flag} is empty; give a file path")
    path = Path(text)
    if path.is_dir():
        example = path / ("out" + (suffixes or (".json",))[0])
        raise CliError(f"{flag} '{path}' is a folder; give a file path, e.g. {example}")
    if suffixes and path.suffix.lower() not in suffixes:
        raise CliError(f"{flag} '{path}': the file name must end in {' or '.join(suffixes)}")
    _check_folder(flag, path, Path(os.path.realpath(path)).parent)  # a link is written at its target
    if path.exists() and not path.is_file():
        raise CliError(f"{flag} '{path}' is not a regular file (a device, pipe or socket); give a file path")
    if path.exists() and not os.access(path, os.W_OK):
        raise CliError(f"{flag} '{path}' exists and is read-only; remove it or choose another path")
    return path


def output_dir(flag: str, text: str) -> Path:
    """Check, before any work, that `text` names a folder for output files that takes new files; a missing
    folder whose parent exists is created now (not its parents: a typo in the parent stays an error), so that
    other outputs may be put in it. Raises CliError."""
    if not text.strip():
        raise CliError(f"{flag} is empty; give a folder")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise CliError(f"{flag} '{path}' is a file, not a folder; give a folder (created if missing)")
    if not path.is_dir():
        _check_folder(flag, path, path.parent)
        try:
            path.mkdir()
        except OSError as err:
            raise CliError(f"{flag} '{path}': cannot create the folder ({err.strerror or err})") from None
    _check_folder(flag, path, path)
    return path


def _check_folder(flag: str, path: Path, folder: Path) -> None:
    """The folder that will hold `path` exists, is a folder and takes new files."""
    if not folder.is_dir():
        ancestor = folder
        while not ancestor.exists():  # ends at '.' or '/', which exist
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise CliError(f"{flag} '{path}': '{ancestor}' is a file, not a folder")
        raise CliError(f"{flag} '{path}': folder '{folder}' does not exist; create it first (mkdir -p {folder}) "
                       f"or fix the path")
    try:
        probe_writable(folder)
    except OSError as err:
        raise CliError(f"{flag} '{path}': cannot create files in folder '{folder}' ({err.strerror or err}); "
                       f"choose a writable folder") from None


def all_schedules() -> list[Schedule]:
    """Every schedule registered under the `dsasim.schedules` entry-point group, in registration order."""
    from importlib.metadata import entry_points  # only when a command needs schedules: keeps --help fast
    found: list[Schedule] = []
    for entry in sorted(entry_points(group="dsasim.schedules"), key=lambda e: e.name):
        found.extend(entry.load())
    names = [s.name for s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"schedule names registered twice: {duplicates}")
    return found


# user schedules loaded from MODULE:NAME / FILE.py:NAME in this run, by schedule name (worker processes forked
# after loading find them here)
_USER_SCHEDULES: dict[str, Schedule] = {}


def load_user_schedules(spec: str) -> list[Schedule]:
    """The schedule(s) a user's `MODULE:NAME` or `FILE.py:NAME` names: a Schedule, or a list or tuple of them (as
    an entry point of the `dsasim.schedules` group holds). ValueError (one line) for anything else, for a module
    that fails to import, or for a name a registered schedule already has."""
    from dsasim.traced.schedule import Schedule
    from dsasim.user_code import load_attribute

    found = load_attribute(spec, "schedule")
    schedules = list(found) if isinstance(found, (list, tuple)) else [found]
    if not schedules or not all(isinstance(s, Schedule) for s in schedules):
        kind = type(found).__name__ if not isinstance(found, (list, tuple)) else \
            f"{type(found).__name__} of {', '.join(sorted({type(s).__name__ for s in found})) or 'nothing'}"
        raise ValueError(f"schedule {spec!r} names an object of type {kind}, not a dsasim.traced.schedule.Schedule "
                         f"(or a list of them)")
    registered = {s.name for s in all_schedules()}
    for schedule in schedules:
        if schedule.name in registered:
            raise ValueError(f"schedule {spec!r}: its name {schedule.name!r} is a registered schedule's; give it "
                             f"another name")
        earlier = _USER_SCHEDULES.get(schedule.name)
        if earlier is not None and earlier is not schedule:
            raise ValueError(f"schedule {spec!r}: another user schedule is named {schedule.name!r} too; give each "
                             f"its own name")
        _USER_SCHEDULES[schedule.name] = schedule
    return schedules


def find_schedule(name: str) -> Schedule:
    """The registered schedule called `name`, or the one a user's `MODULE:NAME` / `FILE.py:NAME` names (or one
    loaded so already); ValueError naming the known ones if there is none."""
    from dsasim.user_code import is_user_spec

    if is_user_spec(name):
        _USER_SCHEDULES.clear()  # a new run (schedules of an earlier `main()` in this process are forgotten)
        found = load_user_schedules(name)
        if len(found) != 1:
            raise ValueError(f"schedule {name!r} holds {len(found)} schedules ({', '.join(s.name for s in found)}); "
                             f"name one Schedule")
        return found[0]
    schedules = {s.name: s for s in all_schedules()}
    if name not in schedules and name in _USER_SCHEDULES:  # (a worker process of `demo --jobs N`)
        return _USER_SCHEDULES[name]
    if name not in schedules:
        raise ValueError(f"unknown schedule {name!r}; known: {', '.join(schedules)} (`dsasim demo` lists them; or "
                         f"MODULE:NAME / FILE.py:NAME for a Schedule of yours)")
    return schedules[name]


def find_schedules(names: Sequence[str] | None) -> list[Schedule]:
    """The registered schedules called `names`, in registration order (all of them for None), then those of the
    user's `MODULE:NAME` / `FILE.py:NAME` among `names`, in the order given; CliError naming the unknown and the
    known ones, or saying why a user's module could not be loaded."""
    from dsasim.user_code import is_user_spec

    _USER_SCHEDULES.clear()  # a new run (schedules of an earlier `main()` in this process are forgotten)
    schedules = all_schedules()
    if names:
        specs = [n for n in names if is_user_spec(n)]
        plain = [n for n in names if n not in specs]
        known = {s.name for s in schedules}
        unknown = [n for n in plain if n not in known]
        if unknown:
            raise CliError(f"unknown schedule(s) {unknown}; known: {', '.join(sorted(known))} (or MODULE:NAME / "
                           f"FILE.py:NAME for a Schedule of yours)")
        schedules = [s for s in schedules if s.name in plain]
        for spec in dict.fromkeys(specs):
            try:
                schedules += load_user_schedules(spec)
            except ValueError as err:
                raise CliError(str(err)) from None
    return schedules


def schedule_inputs(names: Sequence[str] | None) -> list[FileUse]:
    """The source files of the user schedules among `names` (for `check_outputs`)."""
    from dsasim.user_code import is_user_spec, module_file

    return [(f"the source of schedule {n}", module_file(n)) for n in names or () if is_user_spec(n)]


# the kernels the CLI runs, each through its entry-point group `dsasim.<kind>_runner` (the library never imports
# dsasim.kernels): the generic LoopNest kernel, the LevelNest kernel, the fused-chain kernel
RUNNER_KINDS = ("loopnest", "levelnest", "fused", "attention")


def kernel_runner(kind: str) -> Callable[..., Any] | None:
    """The kernel registered under the `dsasim.<kind>_runner` entry-point group (`kind` one of RUNNER_KINDS; e.g.
    `dsasim.kernels.loopnest_kernel.run_loopnest` for "loopnest"), the first by entry name; None when none is
    registered (a search then confirms by the model only)."""
    if kind not in RUNNER_KINDS:
        raise ValueError(f"unknown kernel runner kind {kind!r}; known: {', '.join(RUNNER_KINDS)}")
    from importlib.metadata import entry_points  # only when a command runs: keeps --help fast
    found = sorted(entry_points(group=f"dsasim.{kind}_runner"), key=lambda e: e.name)
    return found[0].load() if found else None


def import_kernel(ref: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(workload, execute) of the kernel module a `KernelRef` names (what the network simulation runs each entry
    with: the library never imports a kernel itself)."""
    import importlib

    module = importlib.import_module(ref.module)
    return getattr(module, ref.workload), getattr(module, ref.execute)


def warner(cmd: str) -> Callable[[str], None]:
    """Print a warning line on stderr (whatever --quiet says: it announces hours of work)."""
    return lambda message: print(f"dsasim {cmd}: warning: {message}", file=sys.stderr, flush=True)


def parse_percent(text: str, flag: str) -> float:
    """'10%' or '10' -> 0.10; ValueError naming `flag` otherwise."""
    body = text.strip().rstrip("%").strip()
    try:
        value = float(body)
    except ValueError:
        raise ValueError(f"{flag} {text!r}: give a percentage such as 10%") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{flag} {text!r}: give a percentage >= 0, such as 10%")
    return value / 100
