"""What of a network is fused on one hardware: on hardware with levels below the SRAM (e.g. blog-l1) nothing is.

The fused models (a chain's segments, `fused_search`; an attention group's schedules, `attention_search`) model one
on-chip level, the SRAM: their figures would leave the inner levels out. So on such hardware the network evaluation
evaluates every chain and fused attention group as its member layers, each searched on the levels
(`level_target.LevelTarget`: its best `LevelNest` by the objective), exactly as `--no-fusion` does on one-level
hardware; `unfused_on_levels` names those entries so that the output says so (a note line and a JSON field), never
silently. A layer's fused epilogue stays fused (its vector work runs on the layer's output in the SRAM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsasim.architect.studies.network import Network, NetworkAttention, NetworkChain, fused_attentions
from dsasim.hardware import Accelerator

__all__ = ["FusedPieces", "fused_pieces", "unfused_on_levels"]


@dataclass(frozen=True)
class FusedPieces:
    """The network's entries fused on one hardware: its chains, each member layer's chain (by layer index) and
    each member layer's attention group with its problem (by layer index)."""

    chains: tuple[NetworkChain, ...]
    in_chain: dict[int, NetworkChain]
    in_attention: dict[int, tuple[NetworkAttention, Any]]

    def searched(self, network: Network) -> list[Any]:
        """The pieces searched, each once: every distinct problem of a layer outside the chains and fused attention
        groups, then every distinct chain, then every distinct attention problem."""
        pieces = list(dict.fromkeys(layer.problem for i, layer in enumerate(network.layers)
                                    if layer.problem is not None and i not in self.in_chain
                                    and i not in self.in_attention))
        pieces += list(dict.fromkeys(nc.chain for nc in self.chains))
        pieces += list(dict.fromkeys(problem for _, problem in self.in_attention.values()))
        return pieces


def fused_pieces(network: Network, hardware: Accelerator, fusion: bool) -> FusedPieces:
    """The entries fused on `hardware` (module docstring): with `fusion` the network's chains and the attention
    groups the attention search takes, on one-level hardware; none on hardware with levels below the SRAM."""
    fused = fusion and not hardware.inner_levels
    chains = network.chains if fused else ()
    return FusedPieces(chains, {i: nc for nc in chains for i in nc.members}, fused_attentions(network, fused))


def unfused_on_levels(network: Network, hardware: Accelerator, fusion: bool) -> list[str]:
    """The chains and attention groups `fusion` would fuse that `hardware`'s levels below the SRAM leave as their
    member layers, each named as its entry would be ('a+b+c'); [] on one-level hardware or without `fusion`."""
    if not fusion or not hardware.inner_levels:
        return []
    groups = [nc.members for nc in network.chains]
    groups += list(dict.fromkeys(group.members for group, _ in fused_attentions(network, True).values()))
    groups.sort(key=lambda members: members[0])  # in network order
    return ["+".join(network.layers[i].name for i in members) for members in groups]
