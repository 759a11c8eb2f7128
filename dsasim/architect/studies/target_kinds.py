"""The registry of target kinds (`TARGET_KINDS`), tried in order by `target_of(spec, hardware)`: the first kind
whose `can_load` takes the spec on that hardware loads it.

- zigzag: a layer of a ZigZag workload YAML (`zigzag:PATH[#LAYER]`, `PATH.yaml[#LAYER]`; `dsasim.architect.problems.zigzag_workload`),
  a `LayerTarget` or `LevelTarget` by the hardware (`zigzag_target`);
- attention: an attention spec (`attention:...`, `problems.attention`), `AttentionTarget` (`attention_target`);
- chain: a chain preset or spec (`chain_catalogue.is_chain`; conv and GEMM chains, `chain_kinds`), `ChainTarget`;
- levels: a layer on hardware with levels below the SRAM (e.g. blog-l1), `LevelTarget`;
- layer: a layer on one-level hardware, `LayerTarget`.

A new kind is one adapter module (a `Target` and its `Choice`, `dsasim.architect.studies.target`) and one
`register_target_kind` call; the command line (`dsasim search`) reads only the protocols. The network evaluation
finds the target of each piece it searches (a layer's problem, a chain) with `network_target_of`, by the kinds'
`of_network`: a kind that gives one is evaluated in a network without a change to `network_eval`.
"""

from __future__ import annotations

from typing import Any

from dsasim.architect.studies.target import Target, TargetKind
from dsasim.hardware import Accelerator

__all__ = ["ATTENTION_TARGET", "CHAIN_TARGET", "LAYER_TARGET", "LEVEL_TARGET", "TARGET_KINDS", "ZIGZAG_TARGET",
           "network_target_of", "register_target_kind", "target_of"]


def _is_chain(spec: str, hardware: Accelerator) -> bool:
    from dsasim.architect.problems.chain_catalogue import is_chain
    return is_chain(spec)


def _load_chain(spec: str, hardware: Accelerator) -> Target:
    from dsasim.architect.studies.chain_target import load_chain_target
    return load_chain_target(spec, hardware)


def _is_attention(spec: str, hardware: Accelerator) -> bool:
    from dsasim.architect.problems.attention import is_attention
    return is_attention(spec)


def _load_attention(spec: str, hardware: Accelerator) -> Target:
    from dsasim.architect.studies.attention_target import load_attention_target
    return load_attention_target(spec, hardware)


def _is_zigzag(spec: str, hardware: Accelerator) -> bool:
    from dsasim.architect.problems.zigzag_workload import is_zigzag_spec
    return is_zigzag_spec(spec)


def _load_zigzag(spec: str, hardware: Accelerator) -> Target:
    from dsasim.architect.studies.zigzag_target import load_zigzag_target
    return load_zigzag_target(spec, hardware)


def _load_level(spec: str, hardware: Accelerator) -> Target:
    from dsasim.architect.studies.level_target import load_level_target
    return load_level_target(spec, hardware)


def _load_layer(spec: str, hardware: Accelerator) -> Target:
    from dsasim.architect.studies.layer_target import load_layer_target
    return load_layer_target(spec, hardware)


def _network_chain(piece: Any, hardware: Accelerator) -> Target | None:
    """A chain target of a network's chain (a registered chain kind's `Chain`), else None."""
    from dsasim.architect.search.chain_kinds import CHAIN_KINDS
    if not any(cls in CHAIN_KINDS for cls in type(piece).__mro__):
        return None
    from dsasim.architect.studies.chain_target import ChainTarget
    return ChainTarget(piece.spec(), piece, hardware)


def _network_layer(piece: Any, hardware: Accelerator) -> Target | None:
    """A layer target of a network's tensorcore layer (its `loopnest.Problem`), else None."""
    from dsasim.architect.nests.loopnest import Problem
    if not isinstance(piece, Problem):
        return None
    from dsasim.architect.studies.layer_target import LayerTarget
    return LayerTarget(piece.spec(), piece, hardware)


def _network_level(piece: Any, hardware: Accelerator) -> Target | None:
    """A layer-on-levels target of a network's tensorcore layer on hardware with levels below the SRAM, else None
    (a chain or an attention group on such hardware is evaluated as its member layers: `network_levels`)."""
    from dsasim.architect.nests.loopnest import Problem
    if not hardware.inner_levels or not isinstance(piece, Problem):
        return None
    from dsasim.architect.studies.level_target import LevelTarget
    return LevelTarget(piece.spec(), piece, hardware)


def _network_attention(piece: Any, hardware: Accelerator) -> Target | None:
    """An attention target of a network's attention group (its `AttentionProblem`), else None."""
    from dsasim.architect.problems.attention import AttentionProblem
    if not isinstance(piece, AttentionProblem):
        return None
    from dsasim.architect.studies.attention_target import AttentionTarget
    return AttentionTarget(piece.spec(), piece, hardware)


# the adapters are imported when a spec is loaded, not with the registry (`dsasim search --help` stays fast)
CHAIN_TARGET = TargetKind("chain", _is_chain, _load_chain, _network_chain)
ATTENTION_TARGET = TargetKind("attention", _is_attention, _load_attention, _network_attention)
LEVEL_TARGET = TargetKind("levels", lambda spec, hardware: bool(hardware.inner_levels), _load_level, _network_level)
LAYER_TARGET = TargetKind("layer", lambda spec, hardware: not hardware.inner_levels, _load_layer, _network_layer)
ZIGZAG_TARGET = TargetKind("zigzag", _is_zigzag, _load_zigzag)  # a file's layer; networks search their own problems

TARGET_KINDS: list[TargetKind] = [ZIGZAG_TARGET, ATTENTION_TARGET, CHAIN_TARGET, LEVEL_TARGET, LAYER_TARGET]


def register_target_kind(kind: TargetKind) -> None:
    """Add a kind, tried before the built-in ones (its `can_load` should take only its own specs); a name already
    registered raises ValueError."""
    if any(k.name == kind.name for k in TARGET_KINDS):
        raise ValueError(f"register_target_kind: a target kind named {kind.name!r} is already registered")
    TARGET_KINDS.insert(0, kind)


def target_of(spec: str, hardware: Accelerator) -> Target:
    """The target `spec` names on `hardware`, loaded by the first kind of TARGET_KINDS that takes it; ValueError
    (one line: what is wrong and what would be right) for a spec its kind cannot load, or that no kind takes."""
    for kind in TARGET_KINDS:
        if kind.can_load(spec, hardware):
            return kind.load(spec, hardware)
    known = ", ".join(k.name for k in TARGET_KINDS)
    raise ValueError(f"no target kind takes {spec!r} on {hardware.name} (kinds: {known})")


def network_target_of(piece: Any, hardware: Accelerator) -> Target:
    """The target of a network's searched piece (a tensorcore layer's problem, a chain) on `hardware`: the first
    kind of TARGET_KINDS whose `of_network` takes it; TypeError when none does (a network importer made a piece no
    kind evaluates)."""
    for kind in TARGET_KINDS:
        if kind.of_network is not None:
            target = kind.of_network(piece, hardware)
            if target is not None:
                return target
    known = ", ".join(k.name for k in TARGET_KINDS if k.of_network is not None)
    raise TypeError(f"no target kind evaluates a {type(piece).__name__} in a network (kinds that do: {known})")
