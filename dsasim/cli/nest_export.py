"""`dsasim search LAYER --timeloop DIR` and `--zigzag DIR`: the best loop nest written in another tool's format.

One mechanism for every format (`NEST_FORMATS`, a registry: a new format is one `NestFormat` entry and its writer
in the library). Checked before the search: the target is a single layer on one-level hardware (its schedule is
one `LoopNest`), the format can take that layer (Timeloop: no padding or groups), DIR is a folder that takes new
files (created if missing) and none of the format's files is there yet (an export is never overwritten, nor the
ZigZag workload a layer was read from: remove the files or choose another folder). After the search, the texts are
all made before any file is written (a nest the format cannot express is one line, nothing written), then every
file is written atomically, all or none.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dsasim.atomic import atomic_path
from dsasim.cli.common import CliError, FileUse, output_dir

__all__ = ["NEST_FORMATS", "NestExport", "NestFormat", "nest_exports"]


@dataclass(frozen=True)
class NestFormat:
    """A format the best nest is written in: its option, what it is (for messages), its files in DIR, the check of
    a layer before the search (ValueError: the format cannot take it), and its texts (nest, hardware at the searched
    size -> one text per file; ValueError: the format cannot express the nest)."""

    flag: str
    what: str
    file_names: tuple[str, ...]
    check: Callable[[Any], None]
    texts: Callable[[Any, Any], tuple[str, ...]]

    def __post_init__(self) -> None:
        if not self.flag.startswith("--") or not self.file_names or len(set(self.file_names)) != len(self.file_names):
            raise ValueError(f"NestFormat {self.flag!r}: needs a --flag and distinct file names")


def _timeloop_check(target: Any) -> None:
    from dsasim.architect.studies.timeloop import check_exportable

    check_exportable(target.problem, target.hardware)


def _timeloop_texts(nest: Any, hardware: Any) -> tuple[str, ...]:
    from dsasim.architect.studies.timeloop import FILE_NAMES, timeloop_files

    texts = timeloop_files(nest, hardware)
    return tuple(texts[kind] for kind in FILE_NAMES)


def _zigzag_texts(nest: Any, hardware: Any) -> tuple[str, ...]:
    from dsasim.architect.nests.zigzag_mapping import mapping_yaml
    from dsasim.architect.problems.zigzag_workload import workload_yaml

    return workload_yaml(nest.problem, hardware.word_bytes * 8), mapping_yaml(nest, hardware, hardware.sram_bytes)


NEST_FORMATS: dict[str, NestFormat] = {
    "timeloop": NestFormat("--timeloop", "Timeloop v0.4 files", ("problem.yaml", "arch.yaml", "map.yaml"),
                           _timeloop_check, _timeloop_texts),
    "zigzag": NestFormat("--zigzag", "a ZigZag workload and mapping", ("workload.yaml", "mapping.yaml"),
                         lambda target: None, _zigzag_texts),
}


@dataclass(frozen=True)
class NestExport:
    """One `--FORMAT DIR` of a search, checked: its format and its folder."""

    format: NestFormat
    folder: Path

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(self.folder / name for name in self.format.file_names)

    def uses(self) -> list[FileUse]:
        """Its outputs, for `check_outputs`."""
        return [(f"{self.format.flag} {self.folder} (its {p.name})", p) for p in self.paths]

    def write(self, nest: Any, hardware: Any) -> tuple[Path, ...]:
        """`nest` (searched on `hardware`, its SRAM at the searched size) as the format's files, all or none;
        CliError before any is written when the format cannot express it."""
        try:
            texts = self.format.texts(nest, hardware)
        except ValueError as err:
            raise CliError(f"{self.format.flag}: {err}") from None
        with contextlib.ExitStack() as stack:  # every rename happens after every text is written
            for path, text in zip(self.paths, texts):
                stack.enter_context(atomic_path(path)).write_text(text, encoding="utf-8")
        return self.paths


def _export(fmt: NestFormat, text: str, spec: str, target: Any) -> NestExport:
    """The checked `fmt.flag DIR` for `target`, before any work (CliError naming what is refused)."""
    if target.kind != "layer":
        where = ("hardware with levels below the SRAM (one tiling per level)" if target.kind == "levels"
                 else f"a {target.kind} target")
        raise CliError(f"{fmt.flag} writes a single layer's loop nest on one-level hardware; {spec} on "
                       f"{target.hardware.name} is {where}, which it does not write; search a single layer on "
                       f"one-level hardware (e.g. --hardware blog)")
    try:
        fmt.check(target)
    except ValueError as err:
        raise CliError(f"{fmt.flag}: {err}") from None
    folder = output_dir(fmt.flag, text)
    export = NestExport(fmt, folder)
    there = [p.name for p in export.paths if p.exists() or p.is_symlink()]
    if there:
        raise CliError(f"{fmt.flag} {folder}: {' and '.join(there)} already exist there; an export is never "
                       f"overwritten: remove them or choose another folder")
    return export


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    """One `--FORMAT DIR` option per registered format."""
    for fmt in NEST_FORMATS.values():
        p.add_argument(fmt.flag, metavar="DIR", help=f"write the best loop nest as {fmt.what} "
                       f"({', '.join('DIR/' + n for n in fmt.file_names)}; a single layer on one-level hardware; "
                       f"never overwrites)")


def nest_exports(args: argparse.Namespace, spec: str, target: Any) -> list[NestExport]:
    """The checked exports a search was asked for (its `--FORMAT DIR` options), before any work."""
    return [_export(fmt, getattr(args, name), spec, target) for name, fmt in NEST_FORMATS.items()
            if getattr(args, name, None) is not None]
