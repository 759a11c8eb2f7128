"""What every chain kind shares (`Chain`, the interface the chain search reads) and what one kind supplies
(`ChainKind`, an entry of the registry `dsasim.architect.search.chain_kinds.CHAIN_KINDS`).

A chain is consecutive layers whose intermediates a fused schedule keeps on chip (`ConvChain`, `GemmChain`). The
chain search (`fused_search.search_chain`) reads only `Chain` and the chain's `ChainKind`: a new kind is a class
satisfying `Chain`, its fused space (an object with `evaluations` and `best(sram_bytes, objective)`), its analysis,
its kernel, and one `register_chain_kind` call; no `isinstance` ladder in the search, the CLI or the kernels.
Below both kinds on purpose: it imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from dsasim.architect.model.fused_analysis import FusedAnalysis
from dsasim.hardware import Accelerator

__all__ = ["Chain", "ChainKind", "KernelRef", "FusedSpaceLike"]


@runtime_checkable
class Chain(Protocol):
    """Consecutive layers, each reading the one before; what the chain search, sweep and network code read."""

    name: str
    layers: Sequence[Any]  # the layers' problems (ConvProblem, MatmulProblem): each searched alone layer by layer
    relu: Sequence[bool]  # per layer: a ReLU on its output (vector work)
    residual: bool  # an identity residual added to the last layer's output (False for kinds without one)

    def __len__(self) -> int: ...

    @property
    def macs(self) -> int: ...

    def compulsory_bytes(self, word_bytes: int) -> int:
        """Bytes no schedule of the chain moves less than (inputs and weights loaded once, the output stored)."""
        ...

    def spec(self) -> str: ...

    def describe(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


class FusedSpaceLike(Protocol):
    """A chain kind's fused space of one segment, evaluated: its size and its best nest under an SRAM size."""

    @property
    def evaluations(self) -> int: ...

    def best(self, sram_bytes: int, objective: Any) -> Any: ...


@dataclass(frozen=True)
class KernelRef:
    """Where a chain kind's fused kernel lives: a module under dsasim.kernels (resolved by the kernels, which the
    library does not import) and its two functions: `workload(chain)` and `execute(nest, session, tensors)`."""

    module: str
    workload: str
    execute: str

    def __post_init__(self) -> None:
        for label, value in (("module", self.module), ("workload", self.workload), ("execute", self.execute)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"KernelRef: {label} must be a non-empty name, got {value!r}")


@dataclass(frozen=True)
class ChainKind:
    """One chain kind: what differs between kinds, as data and functions (module docstring).

    - `fused_spaces(chain, hw)`: every fused segment's space, keyed by its layers [first, stop) (the segment rule:
      a conv chain's every run of two or more layers, a GEMM chain's whole chain);
    - `fused_work(chain, hw, objective, n_capacities)`: the work (a `search.WorkEstimate`) of those spaces and of
      reading their best nests by `objective` at `n_capacities` SRAM sizes, before any is evaluated;
    - `analyze(nest, hw)`: a fused nest's `FusedAnalysis` (what the search reports and the trace must match);
    - `part_json(analysis)`: the kind's extra keys of a fused part in `dsasim search CHAIN --json`;
    - `reference_choice(space, sram_bytes)`: a published model's pick beside the search's (GEMM: Chimera), or None;
    - `no_fit_reason(chain, word_bytes)`: why nothing fused fits, for the CLI;
    - `kernel`: its fused kernel (`KernelRef`);
    - `network_member(layer)`: whether a network layer (`network.NetworkLayer`) may be one of its chain's layers;
    - `max_layers`: the most layers one of its chains has (None: as many as the caller allows);
    - `from_layers(problems, relu, residual)`: its chain of those layers' problems (relu per layer, `residual`: an
      identity residual is available), None where the shapes do not connect; ValueError where it refuses."""

    name: str
    chain_type: type
    fused_spaces: Callable[[Any, Accelerator], Mapping[tuple[int, int], FusedSpaceLike]]
    fused_work: Callable[[Any, Accelerator, Any, int], Any]
    analyze: Callable[[Any, Accelerator], FusedAnalysis]
    part_json: Callable[[FusedAnalysis], dict[str, Any]]
    no_fit_reason: Callable[[Any, int], str]
    kernel: KernelRef
    network_member: Callable[[Any], bool]
    max_layers: int | None
    from_layers: Callable[[Sequence[Any], Sequence[bool], bool], Any]
    reference_choice: Callable[[Any, int], Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"ChainKind: name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.chain_type, type):
            raise ValueError(f"ChainKind {self.name!r}: chain_type must be a class, got {self.chain_type!r}")
        for label in ("fused_spaces", "fused_work", "analyze", "part_json", "no_fit_reason", "network_member",
                      "from_layers"):
            if not callable(getattr(self, label)):
                raise ValueError(f"ChainKind {self.name!r}: {label} must be callable")
        if self.reference_choice is not None and not callable(self.reference_choice):
            raise ValueError(f"ChainKind {self.name!r}: reference_choice must be callable or None")
        if self.max_layers is not None and not (isinstance(self.max_layers, int) and self.max_layers >= 2):
            raise ValueError(f"ChainKind {self.name!r}: max_layers must be None or an int >= 2, got "
                             f"{self.max_layers!r}")
        if not isinstance(self.kernel, KernelRef):
            raise ValueError(f"ChainKind {self.name!r}: kernel must be a KernelRef, got {self.kernel!r}")
