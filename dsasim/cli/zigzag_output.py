"""`dsasim search LAYER --zigzag DIR`: the best loop nest written as a ZigZag workload and mapping YAML
(`DIR/workload.yaml`, `DIR/mapping.yaml`; `dsasim.architect.problems.zigzag_workload`, `dsasim.architect.nests.zigzag_mapping`).

Checked before the search: the target is a single layer on one-level hardware (its schedule is one `LoopNest`),
DIR is a folder that takes new files, and neither file exists (an earlier export is never overwritten: remove it or
choose another folder). Both files are written after the search, each atomically; a failure removes both.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsasim.atomic import atomic_path
from dsasim.cli.common import CliError, FileUse, output_dir

__all__ = ["WORKLOAD_FILE", "MAPPING_FILE", "ZigzagOutput", "zigzag_output"]

WORKLOAD_FILE, MAPPING_FILE = "workload.yaml", "mapping.yaml"


@dataclass(frozen=True)
class ZigzagOutput:
    """The two files `--zigzag DIR` writes, and the ZigZag workload the layer was read from (None: another spec)."""

    folder: Path
    source: str | None

    @property
    def workload(self) -> Path:
        return self.folder / WORKLOAD_FILE

    @property
    def mapping(self) -> Path:
        return self.folder / MAPPING_FILE

    def uses(self) -> tuple[list[FileUse], list[FileUse]]:
        """(its outputs, its inputs) for `check_outputs`."""
        outputs: list[FileUse] = [(f"--zigzag {self.folder} (its {WORKLOAD_FILE})", self.workload),
                                  (f"--zigzag {self.folder} (its {MAPPING_FILE})", self.mapping)]
        return outputs, ([("the ZigZag workload", self.source)] if self.source is not None else [])

    def write(self, choice: Any, hardware: Any, sram_bytes: int) -> None:
        """The choice's nest as the two YAML files, both or neither."""
        from dsasim.architect.problems.zigzag_workload import workload_yaml
        from dsasim.architect.nests.zigzag_mapping import mapping_yaml

        nest = choice.schedule
        texts = (workload_yaml(nest.problem, hardware.word_bytes * 8), mapping_yaml(nest, hardware, sram_bytes))
        with contextlib.ExitStack() as stack:  # every rename happens after every text is written
            for path, text in zip((self.workload, self.mapping), texts):
                stack.enter_context(atomic_path(path)).write_text(text, encoding="utf-8")


def zigzag_output(args: argparse.Namespace, target: Any) -> ZigzagOutput:
    """The checked `--zigzag DIR` of `dsasim search` for `target`, before any work; CliError for a target whose
    best schedule is not one loop nest, a folder that cannot take the files, or a file already there."""
    from dsasim.architect.problems.zigzag_workload import is_zigzag_spec, split_zigzag_spec

    if target.kind != "layer":
        where = ("hardware with levels below the SRAM (one tiling per level)" if target.kind == "levels"
                 else f"a {target.kind} target")
        raise CliError(f"--zigzag writes a single layer's loop nest on one-level hardware; {args.layer} on "
                       f"{target.hardware.name} is {where}, which it does not write; search a single layer on "
                       f"one-level hardware (e.g. --hardware blog)")
    folder = output_dir("--zigzag", args.zigzag)
    out = ZigzagOutput(folder, split_zigzag_spec(args.layer)[0] if is_zigzag_spec(args.layer) else None)
    there = [p.name for p in (out.workload, out.mapping) if p.exists() or p.is_symlink()]
    if there:
        raise CliError(f"--zigzag {folder}: {' and '.join(there)} already exist there; an export is never "
                       f"overwritten: remove them or choose another folder")
    return out
