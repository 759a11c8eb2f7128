"""The command line's error contract, shared by every subcommand (`dsasim.cli.main` applies it).

* A mistake in the command line (unknown name, bad number or size, unusable path, bad hardware file) raises
  `CliError`; `main` prints one line `dsasim COMMAND: what is wrong (how to fix it)` on stderr and exits 2.
  argparse's own errors take the same one-line form (`DsasimArgumentParser.error`).
* Output paths are checked by `output_file` / `output_dir` before any expensive work, and written atomically
  (`dsasim.atomic`).
* Ctrl-C exits 130 with `dsasim COMMAND: interrupted`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Callable, NoReturn

from .atomic import probe_writable

__all__ = ["CliError", "DsasimArgumentParser", "int_at_least", "output_dir", "output_file", "PLOT_SUFFIXES"]

EXIT_FAILED = 1  # the command ran, but what it ran failed (a schedule error, an overflow under simulate, no fit)
EXIT_USAGE = 2  # a mistake in the command line: nothing was run, or nothing was written
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, the shell's convention)
PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".eps", ".ps")  # matplotlib's


class CliError(Exception):
    """A mistake in the command line; its message says what is wrong and how to fix it (exit status 2)."""


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
