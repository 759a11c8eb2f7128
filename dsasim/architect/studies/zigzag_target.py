"""The ZigZag target: a layer of a ZigZag workload YAML (`zigzag:PATH[#LAYER]` or `PATH.yaml[#LAYER]`, read by
`dsasim.architect.problems.zigzag_workload`) searched as the layer it is: a `LayerTarget` on one-level hardware, a `LevelTarget` on
hardware with levels below the SRAM. Its precisions must be the hardware's word (`ZigzagLayer.check_word`); a
partial-sum precision other than the word is said in a warning with each search (dsasim keeps partial sums in
words)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsasim.architect.search.objective import Objective
from dsasim.architect.studies.layer_target import LayerChoice, LayerTarget
from dsasim.architect.studies.level_target import LevelTarget
from dsasim.architect.studies.target import SearchOptions, Target
from dsasim.hardware import Accelerator

__all__ = ["ZigzagLayerTarget", "ZigzagLevelTarget", "load_zigzag_target"]


def _say(note: str | None, options: SearchOptions) -> None:
    if note is not None and options.warn is not None:
        options.warn(note)


@dataclass(frozen=True)
class ZigzagLayerTarget(LayerTarget):
    """A ZigZag layer on one-level hardware; `note`: what dsasim counts differently from the file (or None)."""

    note: str | None = None

    def search(self, sram_bytes: int, objective: Objective | str, options: SearchOptions) -> LayerChoice:
        """The layer's search (`LayerTarget.search`), the note warned first."""
        _say(self.note, options)
        return super().search(sram_bytes, objective, options)


@dataclass(frozen=True)
class ZigzagLevelTarget(LevelTarget):
    """A ZigZag layer on hardware with levels below the SRAM; `note` as `ZigzagLayerTarget.note`."""

    note: str | None = None

    def search(self, sram_bytes: int, objective: Objective | str, options: SearchOptions) -> Any:
        """The layer's search (`LevelTarget.search`), the note warned first."""
        _say(self.note, options)
        return super().search(sram_bytes, objective, options)


def load_zigzag_target(spec: str, hardware: Accelerator) -> Target:
    """The ZigZag layer `spec` names on `hardware`; ValueError (one line naming the file, the layer and what is
    wrong) for a file, a layer or a precision dsasim cannot read."""
    from dsasim.architect.problems.zigzag_workload import read_layer, split_zigzag_spec

    path, which = split_zigzag_spec(spec)
    layer = read_layer(path, which)
    layer.check_word(hardware)
    kind = ZigzagLevelTarget if hardware.inner_levels else ZigzagLayerTarget
    return kind(spec, layer.problem, hardware, layer.partial_note(hardware))
