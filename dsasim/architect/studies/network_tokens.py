"""What a network result says per token, for a layer of a token model (an LLM decoder layer, a BERT layer).

`token_figures(result)` splits the result's DDR traffic by what the bytes are (`Network` layers' `roles`:
`WEIGHTS`, `KV_CACHE`, else `ACTIVATIONS`), from each entry's schedule's own DDR reads and writes per tensor
(`LayerOutcome.access_counts`; a bias and a vector layer's parameters are weights), and gives per token (the
network's `tokens`: prefill batch x sequence, decode the batch):

- bytes per token: weights, KV cache (the attention's K and V reads, the new rows' writes), activations;
- arithmetic intensity: MACs per DDR byte;
- the bound: "memory" when the DDR port's time for the traffic (bytes / dram_bytes_per_cycle) is at least the
  TensorCore's for the MACs (MACs / (tensorcore_in_channels x tensorcore_out_channels) per cycle), else "compute";
- cycles (the evaluation's estimate, summed over the layers) and tokens per second at the hardware's clock.

A whole model is this layer times its layer count (`Network.model_layers`) plus the embedding and the LM head,
which a layer preset does not hold: `whole_model_cycles` is the layers' part only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dsasim.architect.studies.network import ACTIVATIONS, CHAIN, KV_CACHE, VECTOR, WEIGHTS

__all__ = ["TokenFigures", "token_figures", "bytes_by_role"]



def _chain_member_operand(tensor: str) -> tuple[int, str] | None:
    """A chain entry's access-count tensor '[1 2].B' (a fused segment of members 1 and 2: a GEMM chain's
    C = A·B, E = C·D) or '[2].b' (member 2 alone) -> (member index from 0, that member's operand 'b'), for the
    right operands (the weights); None for the others."""
    head, sep, name = tensor.partition("].")
    if not sep or not head.startswith("["):
        return None
    members = [int(x) - 1 for x in head[1:].split()]
    if name in ("b", "B"):
        return members[0], "b"
    if name == "D" and len(members) > 1:
        return members[1], "b"
    return None


def bytes_by_role(outcome: Any, network: Any, word_bytes: int) -> dict[str, int] | None:
    """An entry's DDR bytes (loaded + stored) per role, summing to its traffic; None when its schedule's model gives
    no access counts (its traffic cannot be split)."""
    layer = outcome.layer
    if layer.kind == VECTOR:
        weights = layer.weight_elements * word_bytes
        stored = outcome.stored_bytes
        out = {WEIGHTS: weights, KV_CACHE: stored if layer.role_of("output") == KV_CACHE else 0}
        out[ACTIVATIONS] = outcome.traffic_bytes - out[WEIGHTS] - out[KV_CACHE]
        return out
    counts = outcome.access_counts
    if counts is None:
        return None
    if layer.kind == CHAIN:
        members = [m for m in network.layers if m.name in layer.fused]
        roles = {}
        for t in counts.tensors:
            operand = _chain_member_operand(t.tensor)
            if operand is not None and operand[0] < len(members):
                roles[t.tensor] = members[operand[0]].role_of(operand[1])
        bias = sum(m.bias_elements for m in members) * word_bytes
    else:
        roles = {t: r for t, r in layer.roles}
        bias = layer.bias_elements * word_bytes
    out = {WEIGHTS: bias, KV_CACHE: 0}
    for t in counts.tensors:
        if t.level == "DDR" and roles.get(t.tensor, ACTIVATIONS) != ACTIVATIONS:
            out[roles[t.tensor]] += t.read_bytes + t.write_bytes
    out[ACTIVATIONS] = outcome.traffic_bytes - out[WEIGHTS] - out[KV_CACHE]
    return out


@dataclass(frozen=True)
class TokenFigures:
    """A token model's layer under one hardware and SRAM size, per run and per token (bytes, MACs, cycles)."""

    tokens: int
    weights_bytes: int
    kv_cache_bytes: int
    activation_bytes: int
    macs: int
    cycles: int
    compute_cycles: float  # MACs at the TensorCore's peak rate
    memory_cycles: float  # the traffic at the DDR port's bandwidth
    clock_hz: float
    model_layers: int
    unsplit: tuple[str, ...] = ()  # entries whose traffic could not be split (counted as activations)
    partial: bool = False  # the result leaves layers out: these figures cover the rest

    def __post_init__(self) -> None:
        if self.tokens < 1:
            raise ValueError(f"TokenFigures: tokens must be >= 1, got {self.tokens}")

    @property
    def traffic_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes

    @property
    def arithmetic_intensity(self) -> float:
        """MACs per DDR byte."""
        return self.macs / self.traffic_bytes if self.traffic_bytes else float("inf")

    @property
    def bound(self) -> str:
        """'memory' when the DDR time for the traffic is at least the TensorCore's for the MACs, else 'compute'."""
        return "memory" if self.memory_cycles >= self.compute_cycles else "compute"

    @property
    def tokens_per_second(self) -> float:
        """Tokens per second of this layer alone, at the hardware's clock (a model: divide by its layer count)."""
        return self.tokens * self.clock_hz / self.cycles if self.cycles else float("inf")

    @property
    def whole_model_cycles(self) -> int:
        """The layer's cycles times the model's layer count: a whole model's, without its embedding and head."""
        return self.cycles * self.model_layers

    def per_token(self, value: int) -> float:
        return value / self.tokens

    def to_json(self) -> dict[str, Any]:
        """tokens; bytes per run and per token by role; MACs, intensity, bound, cycles, tokens/s; the model's
        layer count and the layers' cycles for it (its head not included)."""
        return {"tokens": self.tokens, "weights_bytes": self.weights_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "activation_bytes": self.activation_bytes,
                "bytes_per_token": {"weights": self.per_token(self.weights_bytes),
                                    "kv_cache": self.per_token(self.kv_cache_bytes),
                                    "activations": self.per_token(self.activation_bytes),
                                    "total": self.per_token(self.traffic_bytes)},
                "macs": self.macs, "arithmetic_intensity_macs_per_byte": _finite(self.arithmetic_intensity),
                "compute_cycles": self.compute_cycles, "memory_cycles": self.memory_cycles, "bound": self.bound,
                "cycles": self.cycles, "tokens_per_second": _finite(self.tokens_per_second),
                "model_layers": self.model_layers, "whole_model_cycles_without_head": self.whole_model_cycles,
                "unsplit": list(self.unsplit), "partial": self.partial}

    def lines(self) -> list[str]:
        """The figures as text lines (the `dsasim network` report's)."""
        t = self.tokens
        out = [f"  per token ({t:,} token(s) a run): {self.traffic_bytes / t:,.1f} B = weights "
               f"{self.weights_bytes / t:,.1f} + KV cache {self.kv_cache_bytes / t:,.1f} + activations "
               f"{self.activation_bytes / t:,.1f}",
               f"  arithmetic intensity {self.arithmetic_intensity:,.2f} MACs/B; {self.bound}-bound (DDR "
               f"{self.memory_cycles:,.0f} cycles for the traffic, TensorCore {self.compute_cycles:,.0f} for the "
               f"MACs); {self.cycles:,} cycles: {self.tokens_per_second:,.1f} tokens/s for this layer"]
        if self.model_layers:
            out.append(f"  a whole model is this layer x {self.model_layers} plus its embedding and LM head (not "
                       f"modelled here): {self.whole_model_cycles:,} cycles for the layers, "
                       f"{self.tokens_per_second / self.model_layers:,.1f} tokens/s at most")
        if self.unsplit:
            out.append(f"  (traffic of {', '.join(self.unsplit)} not split by role: counted as activations)")
        if self.partial:
            out.append("  (partial: the figures cover only the layers counted)")
        return out


def _finite(value: float) -> float | None:
    """`value`, or None where it is infinite (no traffic, no cycles: every layer left out): JSON has no infinity."""
    return value if math.isfinite(value) else None


def token_figures(result: Any) -> TokenFigures | None:
    """The per-token figures of `result` (a `NetworkResult`), None when its network is not a token model."""
    network, hw = result.network, result.hardware
    if not network.tokens:
        return None
    split = {WEIGHTS: 0, KV_CACHE: 0, ACTIVATIONS: 0}
    unsplit = []
    for x in result.layers:
        if x.status != "ok":
            continue
        parts = bytes_by_role(x, network, hw.word_bytes)
        if parts is None:
            unsplit.append(x.layer.name)
            parts = {ACTIVATIONS: x.traffic_bytes}
        for role, value in parts.items():
            split[role] += value
    macs_per_cycle = hw.tensorcore_in_channels * hw.tensorcore_out_channels
    return TokenFigures(tokens=network.tokens, weights_bytes=split[WEIGHTS], kv_cache_bytes=split[KV_CACHE],
                        activation_bytes=split[ACTIVATIONS], macs=result.macs, cycles=result.cycles,
                        compute_cycles=result.macs / macs_per_cycle,
                        memory_cycles=result.traffic_bytes / hw.dram_bytes_per_cycle, clock_hz=hw.clock_hz,
                        model_layers=network.model_layers, unsplit=tuple(unsplit), partial=result.partial)
