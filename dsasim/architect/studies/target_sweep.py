"""`TargetSweep`: the one result of `dsasim sweep-sram` for every target kind — the target swept, the sizes (bytes)
of the memory swept, per size the kind's choice, and the work done.

Every kind's `sweep(...)` returns one (`SweptTarget` in `dsasim.architect.studies.target`); its JSON is the
target's `sweep_json(sweep)` (each kind keeps its own shape, frozen by the goldens), its text and plot are views
looked up by the target's kind (`dsasim.view.target_text.format_target_sweep`, `plot_target_sweep`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TargetSweep"]


@dataclass(frozen=True)
class TargetSweep:
    """A target swept across sizes (bytes) of one memory `level` (the SRAM unless the kind sweeps another).

    `choices[i]` is the kind's choice at `sizes[i]`: a layer's `SweepPoint`, a chain's `ChainSweepPoint`, a
    layer-on-levels' `LevelAnalysis` (None where nothing fits); `evaluations` counts the candidates the sweep
    evaluated, `seconds` its wall time (never in the JSON)."""

    target: Any  # a SweptTarget: its `kind` picks the view, its `sweep_json` writes the JSON
    sizes: tuple[int, ...]
    choices: tuple[Any, ...]
    evaluations: int
    seconds: float
    level: str = "SRAM"
    objective: str = "traffic"  # the name of the objective the choices are ranked by

    def __post_init__(self) -> None:
        if not isinstance(self.sizes, tuple) or not isinstance(self.choices, tuple):
            raise TypeError("TargetSweep: sizes and choices must be tuples")
        if not self.sizes:
            raise ValueError("TargetSweep: a sweep has at least one size")
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in self.sizes):
            raise ValueError(f"TargetSweep: sizes must be positive whole numbers of bytes, got {self.sizes!r}")
        if list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError(f"TargetSweep: sizes must be increasing and distinct, got {self.sizes!r}")
        if len(self.choices) != len(self.sizes):
            raise ValueError(f"TargetSweep: one choice per size ({len(self.sizes)} sizes, "
                             f"{len(self.choices)} choices)")
        if isinstance(self.evaluations, bool) or not isinstance(self.evaluations, int) or self.evaluations < 0:
            raise ValueError(f"TargetSweep: evaluations must be a whole number >= 0, got {self.evaluations!r}")
        if not self.seconds >= 0:
            raise ValueError(f"TargetSweep: seconds must be >= 0, got {self.seconds!r}")

    @property
    def kind(self) -> str:
        """The target's kind: its text and plot in `dsasim.view.target_text.SWEEP_VIEWS`."""
        return self.target.kind

    @property
    def spec(self) -> str:
        """The target as named, e.g. "resnet18.layer1.0"."""
        return self.target.spec

    @property
    def hardware(self) -> Any:
        """The hardware swept (its size of `level` replaced by each size)."""
        return self.target.hardware

    @property
    def priced(self) -> bool:
        """Whether the kind's choices carry an energy (every built-in kind's do; a kind of a user's may not)."""
        return any(hasattr(c, "energy") for c in self.choices if c is not None)

    def energy_points(self) -> list[Any]:
        """Per size, its cycles and energy (`dsasim.energy.sizing.EnergyPoint`; None where nothing fits): every
        kind's choice carries `energy` and `cycles`."""
        from dsasim.energy.sizing import EnergyPoint

        return [EnergyPoint(size, getattr(c, "cycles", None) if c is not None else None,
                            getattr(c, "energy", None) if c is not None else None)
                for size, c in zip(self.sizes, self.choices)]

    def sizing(self) -> Any:
        """The sizes with the least energy, the least energy x delay and the best performance per mm2
        (`dsasim.energy.sizing.SizingAnswers`)."""
        from dsasim.energy.sizing import SizingAnswers

        return SizingAnswers.of(self.energy_points())

    def to_json(self) -> dict[str, Any]:
        """The JSON `sweep-sram --json` writes: the kind's shape (`target.sweep_json`) and the sizing answers, no
        wall times."""
        out = self.target.sweep_json(self)
        return {**out, "sizing": self.sizing().to_json()} if self.priced else out
