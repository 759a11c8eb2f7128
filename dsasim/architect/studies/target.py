"""What `dsasim search` and `sweep-sram` search: a `Target` (a layer, a layer on hardware with levels below the SRAM,
a chain of layers to fuse), the `Choice` its search returns, and the `SearchOptions` that steer the search.

A target is what the command line names (`resnet50.res2a_branch2b`, `gemm:m=512,n=512,k=512`, `resnet18.layer1.0`)
bound to the hardware it runs on; its kind is picked by the registry `dsasim.architect.studies.target_kinds` (`target_of`).
Every kind answers the same questions (its work estimate, its search, its rules for the options) and its choice the
same figures (traffic, peak SRAM, MACs, cycles and whether they were simulated, the lower and compulsory bounds, the
schedule) and its JSON (`to_json`); its text is a view (`dsasim.view.target_text`, by the choice's `kind`): the
command line has one path for every kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from dsasim.architect.search.objective import Objective
from dsasim.hardware import Accelerator

__all__ = ["Choice", "ConfirmRule", "SearchOptions", "SweptTarget", "Target", "TargetKind"]


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"SearchOptions: {name} must be True or False, got {value!r}")


def _check_callable(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"SearchOptions: {name} must be a function or None, got {value!r}")


@dataclass(frozen=True)
class SearchOptions:
    """How a target is searched (the options `dsasim search` takes), one validated value for every kind.

    - `confirm`: schedules re-run through the trace and the timing simulator; None: the kind's default (a layer on
      one-level hardware its top 3, a chain or a layer on levels its chosen schedule); 0: none;
    - `simulate`: time the traced schedules (False: trace only, cycles stay estimates);
    - `slide`: sliding-window reuse in the space (False: every box reloaded, to see what it gains);
    - `force`: run work estimated beyond the usual instead of refusing it (`warn` then gets the estimate);
    - `kernels(name)`: the traced kernel registered for "loopnest", "fused" or "levelnest" (None: the schedules are
      not re-run; the CLI finds them by entry point: `dsasim.cli.common.kernel_runner`);
    - `progress(fraction)`: the fraction done, 0..1.
    """

    confirm: int | None = None
    simulate: bool = True
    slide: bool = True
    force: bool = False
    warn: Callable[[str], None] | None = None
    kernels: Callable[[str], Any] | None = None
    progress: Callable[[float], None] | None = None

    def __post_init__(self) -> None:
        if self.confirm is not None:
            if isinstance(self.confirm, bool) or not isinstance(self.confirm, int):
                raise TypeError(f"SearchOptions: confirm must be a whole number or None, got {self.confirm!r}")
            if self.confirm < 0:
                raise ValueError(f"SearchOptions: confirm must be >= 0 (0: re-run nothing), got {self.confirm}")
        for name in ("simulate", "slide", "force"):
            _check_bool(name, getattr(self, name))
        for name in ("warn", "kernels", "progress"):
            _check_callable(name, getattr(self, name))

    def kernel(self, name: str) -> Any:
        """The traced kernel registered under `name`, None when there is none (or no `kernels` lookup)."""
        return None if self.kernels is None else self.kernels(name)


@dataclass(frozen=True)
class ConfirmRule:
    """A kind's rule for `SearchOptions.confirm`: its default, and for a kind that re-runs only its chosen
    schedule(s) (`at_most` 1), where (`where`: 'a chain's search') and what (`chosen`) it re-runs, for the refusal
    of a larger count (a count it cannot honour is refused rather than read as 1)."""

    default: int
    at_most: int | None = None
    where: str = ""
    chosen: str = ""

    def __post_init__(self) -> None:
        if self.default < 0 or (self.at_most is not None and not 0 <= self.default <= self.at_most):
            raise ValueError(f"ConfirmRule: default {self.default} must be in 0..{self.at_most}")

    def count(self, confirm: int | None) -> int:
        """How many schedules to re-run: `confirm`, or the default when None; ValueError above `at_most`."""
        if self.at_most is not None and confirm is not None and confirm > self.at_most:
            raise ValueError(f"--confirm {confirm} does not apply to {self.where}: {self.chosen} is re-run through "
                             f"the trace and timing simulator with --confirm 1 (the default there) or not at all "
                             f"with --confirm 0; give 0 or 1 (to confirm a top N, search a single layer on "
                             f"one-level hardware)")
        return self.default if confirm is None else confirm


@runtime_checkable
class Choice(Protocol):
    """The best schedule a target's search found, with its figures (bytes, MACs, cycles) and its two views.

    `fits` is False when no schedule fits (then the figures are None and `no_fit_reason` says why)."""

    spec: str  # the target as named, e.g. "resnet18.layer1.0"
    kind: str  # its target kind: its text is dsasim.view.target_text.CHOICE_TEXTS[kind]
    schedule: Any  # the LoopNest, LevelNest or the chain's segments (None when nothing fits)
    cycles_source: str  # "simulated" or "estimate"

    @property
    def fits(self) -> bool: ...

    @property
    def no_fit_reason(self) -> str: ...

    @property
    def loaded_bytes(self) -> int | None: ...

    @property
    def stored_bytes(self) -> int | None: ...

    @property
    def traffic_bytes(self) -> int | None: ...

    @property
    def peak_sram_bytes(self) -> int | None: ...

    @property
    def macs(self) -> int | None: ...

    @property
    def cycles(self) -> int | None: ...

    @property
    def lower_bound_bytes(self) -> int: ...

    @property
    def compulsory_bytes(self) -> int: ...

    @property
    def evaluations(self) -> int: ...

    def to_json(self) -> dict[str, Any]:
        """The JSON object `dsasim search --json` writes (stable key order, no wall times)."""
        ...


@runtime_checkable
class Target(Protocol):
    """What is searched: a layer or a chain, bound to its hardware (module docstring)."""

    spec: str
    hardware: Accelerator

    @property
    def kind(self) -> str:
        """The registry entry that loaded it (`TargetKind.name`)."""
        ...

    @property
    def progress_label(self) -> str:
        """The progress bar's label, e.g. 'search blog-conv'."""
        ...

    def confirm_count(self, options: SearchOptions) -> int:
        """How many schedules the search re-runs; ValueError for an option that does not apply to this kind."""
        ...

    def estimate_work(self, sram_bytes: int, options: SearchOptions) -> Any:
        """The search's work (a `search.WorkEstimate`, seconds) under `sram_bytes`, before it starts."""
        ...

    def search(self, sram_bytes: int, objective: Objective | str, options: SearchOptions) -> Choice:
        """The best schedule under `sram_bytes` (bytes) by `objective`; ValueError for what cannot be searched."""
        ...


@runtime_checkable
class SweptTarget(Target, Protocol):
    """A target `dsasim sweep-sram` can sweep across sizes (bytes) of the SRAM or of one `level` below it."""

    def check_sweep(self, level: str | None, objective: str | None, options: SearchOptions) -> None:
        """ValueError for a level, objective or option the kind's sweep does not take, before any work."""
        ...

    def check_sizes(self, sizes: Sequence[int], level: str | None) -> None:
        """ValueError for a size (bytes) the kind cannot sweep, before any work."""
        ...

    def sweep_work(self, sizes: Sequence[int], level: str | None, options: SearchOptions) -> Any:
        """The sweep's work estimate for the caller's progress bar, or None when the sweep draws its own."""
        ...

    def sweep(self, sizes: Sequence[int], level: str | None, objective: str | None, options: SearchOptions,
              show_progress: bool) -> Any:
        """The sweep's `TargetSweep` (`dsasim.architect.studies.target_sweep`): per size the kind's choice; its
        text and plot by the kind (`dsasim.view.target_text.SWEEP_VIEWS`)."""
        ...

    def sweep_json(self, sweep: Any) -> dict[str, Any]:
        """The JSON object `sweep-sram --json` writes for this target's `TargetSweep` (the kind's shape)."""
        ...


@dataclass(frozen=True)
class TargetKind:
    """One entry of `dsasim.architect.studies.target_kinds.TARGET_KINDS`: which specs it takes on which hardware
    (`can_load(spec, hardware)`, cheap: no parsing errors) and how it makes a `Target` of one (`load(spec,
    hardware)`, ValueError with a one-line message for a bad spec); for a kind the network evaluation searches,
    `of_network(piece, hardware)`: the target of a network's piece (a layer's problem, a chain) when the kind takes
    that piece, else None (`dsasim.architect.studies.target_kinds.network_target_of`)."""

    name: str
    can_load: Callable[[str, Accelerator], bool]
    load: Callable[[str, Accelerator], Target]
    of_network: Callable[[Any, Accelerator], Target | None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"TargetKind: name must be a non-empty string, got {self.name!r}")
        for label in ("can_load", "load"):
            if not callable(getattr(self, label)):
                raise TypeError(f"TargetKind {self.name!r}: {label} must be a function")
        if self.of_network is not None and not callable(self.of_network):
            raise TypeError(f"TargetKind {self.name!r}: of_network must be a function or None")
