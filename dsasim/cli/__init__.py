"""The `dsasim` command line: one parser built from one registry of commands, one error path.

    dsasim demo | simulate NAME | search LAYER | sweep-sram LAYER --sizes LO:HI[:POINTS] | network NAME |
    shapes LAYER --vary DIM=LO:HI | hardware [PRESET|FILE]   (see --help of each)

Each command is a module of this package (`demo`, `simulate`, `search`, `sweep`, `network`, `shapes`, `hardware`) holding a `COMMAND` record
(`common.Command`): its arguments and its run function. The run function imports the command's model (torch,
the timing simulator, the search, matplotlib), so building the parser (`dsasim --help`) stays fast. Every table
is printed by `table.format_table`. Schedules are found through the `dsasim.schedules` entry-point group, so
the library never imports `kernels/`; the model packages never import this package.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from dsasim.cli import demo, hardware, network, search, shapes, simulate, sweep, timeloop
from dsasim.cli.common import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, CliError, Command, DsasimArgumentParser,
                     all_schedules, find_schedule)

__all__ = ["COMMANDS", "CliError", "all_schedules", "build_parser", "find_schedule", "main"]

COMMANDS: tuple[Command, ...] = (demo.COMMAND, simulate.COMMAND, search.COMMAND, sweep.COMMAND, network.COMMAND,
                                 shapes.COMMAND, hardware.COMMAND, timeloop.COMMAND)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `dsasim` command: one subcommand per entry of `COMMANDS`."""
    parser = DsasimArgumentParser(prog="dsasim", description="Trace-driven DSA simulator.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dsasim` console script; returns the exit status (see docs/reference/errors.md).

    0: done; 1: it ran, but a schedule failed (an error; under `simulate`, also an overflow) or nothing fits;
    2: a mistake in the command line, one line `dsasim COMMAND: message` on stderr; 130: interrupted (Ctrl-C).
    No traceback for any input."""
    command = "dsasim"
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # argparse has printed --help (0) or its one-line error (2)
            return stop.code if isinstance(stop.code, int) else EXIT_USAGE
        command = f"dsasim {args.command}"
        from dsasim.util import numpy_hugepages_off

        numpy_hugepages_off()  # first touch of the large trace and timing columns costs ~6x less (see its doc)
        return args.func(args)
    except CliError as err:
        print(f"{command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        if sys.stderr.isatty():  # the terminal echoed ^C (or a progress bar is mid-line): start a fresh line
            print(file=sys.stderr)
        print(f"{command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as err:
        if isinstance(err, BrokenPipeError):  # `dsasim demo | head`: the reader left; nothing more to say
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_FAILED
        # e.g. an output that became unwritable after the checks (disk full, folder removed): atomic writes
        # leave nothing half-written
        where = f": {err.filename}" if err.filename else ""
        print(f"{command}: {err.strerror or err}{where}", file=sys.stderr)
        return EXIT_USAGE
