"""A network's traffic and cycles under one or many SRAM sizes: the best schedule per layer, summed.

`evaluate_network(network, hardwares, sizes, executor=...)` searches every distinct tensorcore problem and chain of
the network once per hardware, each as a target (`target_kinds.network_target_of`: the kind that evaluates it; one
task, `target_figures.sweep_target_task`, for every kind; a layer's search front serves every SRAM size), spreads
those searches over an executor (`dsasim.architect.studies.executor`: in process, a process pool, or a Dask cluster) and assembles, per hardware
and SRAM size, a `NetworkResult`: per layer its best schedule by traffic (ties: estimated cycles; or by cycles),
its estimated cycles, its lower bound and compulsory traffic, TensorCore utilization and padding waste; network totals.

Per layer kind (see `dsasim.architect.studies.network`):
- tensorcore: the search's best nest by traffic under the SRAM size; cycles are the analytic model's estimate
  (max of TensorCore, vector and DDR time with the nest's buffering), at least the fused epilogue's vector time;
  its bound is `lower_bound` (max of compulsory and the dataflow bound). A batched layer counts `count` times.
  A layer no tiling fits is "unplaceable": named, with the reason, and left out of the totals.
- vector: streaming, its compulsory traffic (read its operands, write its result) is its traffic and its bound;
  cycles = max(lane operations / vector lanes, its DDR bytes / dram_bytes_per_cycle).
- unmodelled: no figures; listed in `unmodelled`.

- attention (with fusion): an attention group (`Network.attentions`: its scores matmul, softmax and output matmul)
  is one entry, its best schedule by `search_attention` under the SRAM size (the attention target's
  `network_choices`, by the same objective: unfused, S or P stored, or online-softmax fused, whichever ranks
  first); an attention mask is loaded beside it (and added on chip: one lane operation per score, after the
  schedule's cycles). Its K and V reads are the KV cache in the per-token figures. A group the attention search
  cannot take (V's head dimension differs, sizes past exact counts) and every group with `fusion` off is evaluated
  as its unfused member layers, each as above. A layer of a
token model (`Network.tokens`) adds its per-token figures (`NetworkResult.per_token`, `network_tokens`).

On hardware with levels below the SRAM (e.g. blog-l1) a tensorcore layer is searched by the level search (its best
`LevelNest` per size, `level_target.LevelTarget`; its `level_bytes` per inner level, its energy priced per level),
and chains and attention groups are evaluated as their member layers and named (`network_levels`).

Results depend only on (network, hardware, sizes): the same inputs give byte-identical JSON whichever executor ran
the searches (results are placed by task index, never by completion order).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from dsasim.architect.studies.network import (ATTENTION, CHAIN, KV_CACHE, TENSORCORE, UNMODELLED, VECTOR, Network,
                                              NetworkAttention, NetworkChain, NetworkLayer)
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, Objective, objective_named
from dsasim.architect.studies.target_figures import TargetFigures, sweep_target_task
from dsasim.architect.studies.target_kinds import network_target_of
from dsasim.architect.studies.network_levels import fused_pieces, unfused_on_levels
from dsasim.architect.studies.network_accesses import (chain_entry_counts, extra_operand_counts,
                                                       tensorcore_layer_counts, vector_layer_counts)
from dsasim.energy.accesses import AccessCounts
from dsasim.energy.report import EnergyReport, energy_json, energy_report
from dsasim.energy.sizing import EnergyPoint, SizingAnswers
from dsasim.hardware import Accelerator
from dsasim.architect.search.layer_search import tensorcore_utilization
from dsasim.cost import ddr_port, dma_cycles, overlapped_cycles, vector_cycles
from dsasim.util import parse_whole

__all__ = ["LayerOutcome", "NetworkResult", "NetworkSweep", "evaluate_network", "sized_hardware", "smallest_within",
           "sweep_network", "vary_hardware"]


@dataclass(frozen=True)
class LayerOutcome:
    """One layer of a network under one SRAM size."""

    layer: NetworkLayer
    status: str  # "ok", "unplaceable" or "unmodelled"
    loaded_bytes: int = 0
    stored_bytes: int = 0
    cycles: int = 0
    lower_bound_bytes: int = 0
    compulsory_bytes: int = 0
    macs: int = 0  # MACs the schedule runs (a tile that reads only padding is skipped, so this may be below the
    # problem's MACs, padding taps included)
    tensorcore_utilization: float | None = None  # useful / padded MACs while the TensorCore computes
    peak_sram_bytes: int = 0
    schedule: dict[str, Any] | None = None  # the best nest (LoopNest.to_json)
    reason: str = ""
    # per level below the SRAM (a layer searched on levels): (level, bytes staged in from its parent, bytes written
    # back to it), the hierarchy model's, repeats counted; () on one-level hardware and for a streaming layer
    level_bytes: tuple[tuple[str, int, int], ...] = ()
    # its reads and writes (`network_accesses`) priced on the hardware at this SRAM size over its cycles; None for
    # a layer left out (unmodelled, unplaceable) or whose schedule's model gives no counts
    energy: EnergyReport | None = field(default=None, compare=False)
    access_counts: AccessCounts | None = field(default=None, compare=False, repr=False)

    @property
    def traffic_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes

    def to_json(self) -> dict[str, Any]:
        """The layer's figures (the network JSON's keys plus name and shape)."""
        out = self.layer.to_json()
        out.update(status=self.status, loaded_bytes=self.loaded_bytes, stored_bytes=self.stored_bytes,
                   cycles=self.cycles, lower_bound_bytes=self.lower_bound_bytes,
                   compulsory_bytes=self.compulsory_bytes, macs=self.macs)
        if self.tensorcore_utilization is not None:
            out["tensorcore_utilization"] = round(self.tensorcore_utilization, 6)
            out["padding_waste"] = round(1.0 - self.tensorcore_utilization, 6)
        if self.schedule is not None:
            out["schedule"] = self.schedule
        if self.level_bytes:
            out["levels"] = [{"level": name, "loaded_bytes": loaded, "stored_bytes": stored}
                             for name, loaded, stored in self.level_bytes]
        if self.reason and "reason" not in out:
            out["reason"] = self.reason
        out.update(energy_json(self.energy))
        return out


@dataclass(frozen=True)
class NetworkResult:
    """A network under one hardware and SRAM size: per-layer outcomes and totals (unplaceable and unmodelled
    layers are left out of the totals and named)."""

    network: Network
    hardware: Accelerator
    sram_bytes: int
    layers: tuple[LayerOutcome, ...]
    # the chains and attention groups evaluated as their member layers because the hardware has levels below the
    # SRAM (`network_levels`), named as their entries would be
    unfused_on_levels: tuple[str, ...] = ()
    # the network traced and timed in one timeline (`network_simulation.NetworkSimulation`, `--simulate`), or None
    simulation: Any = field(default=None, repr=False, compare=False)
    _ok: tuple[LayerOutcome, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ok", tuple(x for x in self.layers if x.status == "ok"))

    def _total(self, key: str) -> int:
        return sum(getattr(x, key) for x in self._ok)

    loaded_bytes = property(lambda self: self._total("loaded_bytes"), doc="bytes loaded, placed layers summed")
    stored_bytes = property(lambda self: self._total("stored_bytes"), doc="bytes stored, placed layers summed")
    traffic_bytes = property(lambda self: self._total("traffic_bytes"), doc="loaded + stored bytes")
    cycles = property(lambda self: self._total("cycles"), doc="estimated cycles, placed layers summed")
    lower_bound_bytes = property(lambda self: self._total("lower_bound_bytes"), doc="the layers' bounds summed")
    compulsory_bytes = property(lambda self: self._total("compulsory_bytes"), doc="compulsory bytes summed")
    macs = property(lambda self: self._total("macs"), doc="MACs the placed layers' schedules run")

    @property
    def level_bytes(self) -> list[tuple[str, int, int]]:
        """Per level below the SRAM (hardware order): (level, bytes staged in from its parent, bytes written back),
        the placed layers summed; [] on one-level hardware."""
        return [(lv.name, sum(b[1] for x in self._ok for b in x.level_bytes if b[0] == lv.name),
                 sum(b[2] for x in self._ok for b in x.level_bytes if b[0] == lv.name))
                for lv in self.hardware.inner_levels]

    def levels_json(self) -> dict[str, Any]:
        """On hardware with levels below the SRAM: "levels" (per inner level its parent and the bytes staged in and
        written back, summed) and "unfused_on_levels"; {} on one-level hardware (its JSON is unchanged)."""
        if not self.hardware.inner_levels:
            return {}
        parents = {lv.name: lv.parent for lv in self.hardware.inner_levels}
        return {"levels": [{"level": name, "parent": parents[name], "loaded_bytes": loaded, "stored_bytes": stored}
                           for name, loaded, stored in self.level_bytes],
                "unfused_on_levels": list(self.unfused_on_levels)}

    @property
    def unmodelled(self) -> list[str]:
        return [x.layer.name for x in self.layers if x.status == "unmodelled"]

    @property
    def unplaceable(self) -> list[str]:
        return [x.layer.name for x in self.layers if x.status == "unplaceable"]

    @property
    def left_out(self) -> list[str]:
        """The layers left out of the totals (unmodelled or unplaceable), in network order."""
        return [x.layer.name for x in self.layers if x.status != "ok"]

    @property
    def partial(self) -> bool:
        """True when a layer is left out: the totals cover only part of the network."""
        return len(self._ok) < len(self.layers)

    @property
    def energy_left_out(self) -> list[str]:
        """The layers left out of the energy total: those left out of every total, and placed layers whose
        schedule's model gives no access counts (never counted as zero)."""
        return [x.layer.name for x in self.layers if x.energy is None]

    @functools.cached_property
    def energy(self) -> EnergyReport | None:
        """Energy per inference of the counted layers (`energy_left_out` names the rest): their reports summed (each
        priced on the hardware at this SRAM size over its own cycles; leakage is linear in cycles, so this is the
        sum's price over the summed cycles), per tensor qualified by layer name; None when no layer is counted.
        Summed as reports, not as counts: thousands of access records per size would cost the sweep its speed."""
        reports = [(x.layer.name, x.energy) for x in self.layers if x.energy is not None]
        if not reports:
            return None

        def summed(key: str) -> dict[str, float]:
            out: dict[str, float] = {}
            for _, r in reports:
                for k, v in getattr(r, key).items():
                    out[k] = out.get(k, 0.0) + v
            return out

        tensor = {f"{name}.{t}": v for name, r in reports for t, v in r.tensor_pj.items()}
        first = reports[0][1]
        return EnergyReport(summed("energy_breakdown_pj"), summed("level_read_pj"), summed("level_write_pj"),
                            dict(sorted(tensor.items())), sum(r.mac_waste_pj for _, r in reports),
                            sum(r.macs for _, r in reports), sum(r.cycles for _, r in reports), first.clock_hz,
                            dict(first.area_breakdown_mm2))

    @property
    def energy_point(self) -> EnergyPoint:
        """This size as a point of the sizing answers: it fits when every layer not unmodelled is placed and
        counted (a size where a layer does not fit must not win by leaving that layer's energy out)."""
        whole = all(x.energy is not None for x in self.layers if x.status != "unmodelled")
        return EnergyPoint(self.sram_bytes, self.cycles if whole else None, self.energy if whole else None)

    @functools.cached_property
    def per_token(self) -> Any:
        """A token model's figures per token (`network_tokens.TokenFigures`: bytes by weights, KV cache and
        activations, intensity, bound, tokens/s); None for a network that is not one."""
        from dsasim.architect.studies.network_tokens import token_figures
        return token_figures(self)

    def dominant(self, top: int = 5) -> list[tuple[LayerOutcome, float, float]]:
        """The `top` layers by cycles, each with its share of the total cycles and of the total traffic."""
        cyc, tra = max(self.cycles, 1), max(self.traffic_bytes, 1)
        ranked = sorted(self._ok, key=lambda x: (-x.cycles, -x.traffic_bytes, x.layer.name))[:top]
        return [(x, x.cycles / cyc, x.traffic_bytes / tra) for x in ranked]

    def to_json(self) -> dict[str, Any]:
        """network, hardware, sram_bytes, the totals, partial (a layer is left out of them), unmodelled,
        unplaceable, a token model's per-token figures and its attention blocks (where it has them) and layers (in
        network order)."""
        extra: dict[str, Any] = {}
        if self.per_token is not None:
            extra["per_token"] = self.per_token.to_json()
        if self.network.attentions:
            extra["attention"] = [a.to_json(self.network) for a in self.network.attentions]
        return {"network": self.network.name, "hardware": self.hardware.name, "sram_bytes": self.sram_bytes,
                "loaded_bytes": self.loaded_bytes, "stored_bytes": self.stored_bytes, "cycles": self.cycles,
                "lower_bound_bytes": self.lower_bound_bytes, "compulsory_bytes": self.compulsory_bytes,
                "macs": self.macs, "partial": self.partial, "unmodelled": self.unmodelled,
                "unplaceable": self.unplaceable, **self.levels_json(), **energy_json(self.energy),
                "energy_left_out": self.energy_left_out, **extra,
                "layers": [x.to_json() for x in self.layers],
                **({"simulation": self.simulation.to_json()} if self.simulation is not None else {})}


def _vector_outcome(layer: NetworkLayer, hardware: Accelerator) -> LayerOutcome:
    wb = hardware.word_bytes
    loaded, stored = layer.read_elements * wb, layer.write_elements * wb
    # a roofline: the DDR port's time for the bytes (no setups counted) against the vector unit's
    ddr = dma_cycles(ddr_port(hardware), 0, loaded, 0, stored)
    cycles = overlapped_cycles(vector_cycles(layer.vector_ops, hardware.vector_lanes), ddr)
    counts = vector_layer_counts(loaded, stored, layer.vector_ops)
    return LayerOutcome(layer=layer, status="ok", loaded_bytes=loaded, stored_bytes=stored, cycles=cycles,
                        lower_bound_bytes=loaded + stored, compulsory_bytes=loaded + stored,
                        energy=energy_report(counts, hardware, cycles), access_counts=counts)


def _tensorcore_outcome(layer: NetworkLayer, hardware: Accelerator, found: TargetFigures | str) -> LayerOutcome:
    if isinstance(found, str):
        return LayerOutcome(layer=layer, status="unplaceable", reason=found)
    c = layer.count
    epilogue = vector_cycles(layer.epilogue_ops, hardware.vector_lanes)
    # a fused residual add's other operand and the bias: loaded once for the layer (a batched layer's operand is
    # already its whole batch; a bias is never batched)
    extra = (layer.extra_read_elements + layer.bias_elements) * hardware.word_bytes
    schedule = _labelled(found.schedule, layer.name)
    cycles = overlapped_cycles(c * found.cycles, epilogue)
    counts = (None if found.access_counts is None else
              tensorcore_layer_counts(found.access_counts, c, extra, layer.epilogue_ops))
    return LayerOutcome(
        layer=layer, status="ok", loaded_bytes=c * found.loaded_bytes + extra, stored_bytes=c * found.stored_bytes,
        cycles=cycles,
        lower_bound_bytes=c * found.lower_bound_bytes + extra,
        compulsory_bytes=c * found.compulsory_bytes + extra, macs=c * found.macs,
        tensorcore_utilization=tensorcore_utilization(found.macs, found.tensorcore_cycles, hardware),
        peak_sram_bytes=found.peak_sram_bytes, schedule=schedule,
        level_bytes=tuple((name, c * loaded, c * stored) for name, loaded, stored in found.level_bytes),
        energy=None if counts is None else energy_report(counts, hardware, cycles), access_counts=counts)


def _labelled(schedule: dict[str, Any], name: str) -> dict[str, Any]:
    """One search serves every layer of a shape: its nest (a LoopNest's JSON, or a LevelNest's whose outer nest
    holds the problem) labelled with this layer's name."""
    if "problem" in schedule:
        return {**schedule, "problem": {**schedule["problem"], "name": name}}
    if "outer" in schedule and "problem" in schedule["outer"]:
        return {**schedule, "outer": _labelled(schedule["outer"], name)}
    return schedule


def sized_hardware(hardware: Accelerator, sram_bytes: int) -> Accelerator:
    """`hardware` with its SRAM at `sram_bytes`; ValueError (one line) for a size that makes no valid hierarchy
    (a level below the SRAM larger than it)."""
    try:
        return replace(hardware, sram_bytes=sram_bytes)
    except ValueError as err:
        raise ValueError(f"SRAM size {sram_bytes:,} B on {hardware.name}: {err}; give sizes at least as large as "
                         f"the levels below the SRAM") from None


def _chain_outcome(network: Network, nc: NetworkChain, hardware: Accelerator,
                   found: TargetFigures | str) -> LayerOutcome:
    """One entry for a chain of layers (its members named; its best partition in `schedule`)."""
    members = [network.layers[i] for i in nc.members]
    partition = "" if isinstance(found, str) else f" {found.label}"  # [1 2 3]: all fused; [1] [2 3] ...
    layer = NetworkLayer(name="+".join(m.name for m in members), op="chain" + partition, kind=CHAIN,
                         shape=nc.chain.spec() + (" (+ identity residual)" if nc.chain.residual else ""),
                         fused=tuple(f for m in members for f in (m.name,) + m.fused))
    if isinstance(found, str):
        return LayerOutcome(layer=layer, status="unplaceable", reason=found)
    extra = nc.extra_read_elements * hardware.word_bytes  # a projection's output and the members' biases
    counts = None if found.access_counts is None else chain_entry_counts(found.access_counts, extra)
    return LayerOutcome(
        layer=layer, status="ok", loaded_bytes=found.loaded_bytes + extra, stored_bytes=found.stored_bytes,
        cycles=found.cycles, lower_bound_bytes=found.lower_bound_bytes + extra,
        compulsory_bytes=found.compulsory_bytes + extra, macs=found.macs,
        tensorcore_utilization=tensorcore_utilization(found.macs, found.tensorcore_cycles, hardware),
        peak_sram_bytes=found.peak_sram_bytes, schedule=found.schedule,
        energy=None if counts is None else energy_report(counts, hardware, found.cycles), access_counts=counts)


def _attention_outcome(network: Network, group: NetworkAttention, hardware: Accelerator,
                       found: TargetFigures | str) -> LayerOutcome:
    """One entry for an attention group (its members named; its best schedule, kind and tiles, in `schedule`)."""
    members = [network.layers[i] for i in group.members]
    label = "" if isinstance(found, str) else f" {found.label}"  # e.g. "q-outer br=64 bc=128"
    layer = NetworkLayer(name="+".join(m.name for m in members), op="attention" + label, kind=ATTENTION,
                         shape=group.spec(), fused=tuple(f for m in members for f in (m.name,) + m.fused),
                         roles=(("K", KV_CACHE), ("V", KV_CACHE)))
    if isinstance(found, str):
        return LayerOutcome(layer=layer, status="unplaceable", reason=found)
    # an attention mask tensor: loaded once beside the schedule (the unfused scores layer's extra operand) and
    # added to every score (one lane operation each), its vector time after the schedule's (not overlapped)
    extra = members[0].extra_read_elements * hardware.word_bytes
    mask_ops = group.b * group.h * group.n * group.m if group.masked else 0
    cycles = found.cycles + vector_cycles(mask_ops, hardware.vector_lanes)
    counts = (None if found.access_counts is None else
              AccessCounts.sum([found.access_counts, extra_operand_counts(extra, mask_ops)]))
    return LayerOutcome(
        layer=layer, status="ok", loaded_bytes=found.loaded_bytes + extra, stored_bytes=found.stored_bytes,
        cycles=cycles, lower_bound_bytes=found.lower_bound_bytes + extra,
        compulsory_bytes=found.compulsory_bytes + extra, macs=found.macs,
        tensorcore_utilization=tensorcore_utilization(found.macs, found.tensorcore_cycles, hardware),
        peak_sram_bytes=found.peak_sram_bytes, schedule=found.schedule,
        energy=None if counts is None else energy_report(counts, hardware, cycles), access_counts=counts)


def check_network_objective(network: Network, objective: Objective | str, fusion: bool) -> None:
    """ValueError (one line) for an objective the network's pieces cannot rank by, before any work: an unknown
    name. Every registered objective ranks a network's single layers and its fused chains (energy and edp price
    each size: the chains' fused spaces and partitions at that SRAM size), with or without `fusion`."""
    objective_named(objective)


def evaluate_network(network: Network, hardwares: Sequence[Accelerator], sizes: Sequence[int],
                     executor: Any = None, progress: bool = False,
                     objective: Objective | str = DEFAULT_OBJECTIVE, fusion: bool = True,
                     estimated_seconds: float | None = None) -> list[list[NetworkResult]]:
    """Per hardware (outer) and SRAM size in bytes (inner), the network's NetworkResult.

    `executor` is an `dsasim.architect.studies.executor.Executor` (default: in this process). Every distinct problem is
    searched once per hardware (a cache by shape: ResNet-50's 53 convs are 20 to 23 searches). With `fusion`, each
    of the network's chains (`Network.chains`) gets its best partition into fused segments and single layers
    (`sweep_chain`, by the same objective) and is one entry; its layers are not searched on their own. With
    `progress`, the executor's bar on stderr counts the searches, labelled with `estimated_seconds` when given
    (the caller's `sweep.estimate_network_sweep_work`)."""
    from dsasim.architect.studies.executor import InProcess

    if not sizes:
        raise ValueError("evaluate_network needs at least one SRAM size")
    if not hardwares:
        raise ValueError("evaluate_network needs at least one hardware")
    objective = objective_named(objective)
    check_network_objective(network, objective, fusion)
    caps = tuple(int(s) for s in sizes)
    sized_of = {hw: [sized_hardware(hw, cap) for cap in caps] for hw in hardwares}  # refused before any search
    # what is fused on each hardware (none on levels below the SRAM: `network_levels`) and the pieces searched
    # there, each one target (`network_target_of`: the kind that evaluates it) and one task per hardware
    fused_of = {hw: fused_pieces(network, hw, fusion) for hw in hardwares}
    keys = [(hw, piece) for hw in hardwares for piece in fused_of[hw].searched(network)]
    tasks = [(sweep_target_task, (network_target_of(piece, hw), caps, objective)) for hw, piece in keys]
    runner = executor if executor is not None else InProcess()
    label = f"{network.name}: searches"
    if estimated_seconds is not None:
        from dsasim.architect.search.layer_search import _duration
        label += f" (estimated {_duration(estimated_seconds)})"
    found = runner.run(_call, tasks, label=label, progress=progress)
    per_hw = dict(zip(keys, found))
    results: list[list[NetworkResult]] = []
    for hw in hardwares:
        row = []
        in_chain, in_attention = fused_of[hw].in_chain, fused_of[hw].in_attention
        unfused = tuple(unfused_on_levels(network, hw, fusion))
        for i, cap in enumerate(caps):
            outcomes = []
            sized = sized_of[hw][i]  # what the entries' energy is priced on: the SRAM at this size
            for index, layer in enumerate(network.layers):
                if index in in_attention:
                    group, problem = in_attention[index]
                    if index == group.members[0]:
                        outcomes.append(_attention_outcome(network, group, sized, per_hw[(hw, problem)][i]))
                elif index in in_chain:
                    nc = in_chain[index]
                    if index == nc.first:
                        outcomes.append(_chain_outcome(network, nc, sized, per_hw[(hw, nc.chain)][i]))
                elif layer.kind == TENSORCORE:
                    outcomes.append(_tensorcore_outcome(layer, sized, per_hw[(hw, layer.problem)][i]))
                elif layer.kind == VECTOR:
                    outcomes.append(_vector_outcome(layer, sized))
                else:
                    assert layer.kind == UNMODELLED
                    outcomes.append(LayerOutcome(layer=layer, status="unmodelled", reason=layer.reason))
            row.append(NetworkResult(network=network, hardware=hw, sram_bytes=cap, layers=tuple(outcomes),
                                     unfused_on_levels=unfused))
        results.append(row)
    return results


def _call(fn: Any, args: tuple) -> Any:
    """fn(*args): one executor task (the task's function travels with it, by name)."""
    return fn(*args)


def smallest_within(results: Sequence[NetworkResult], fraction: float) -> NetworkResult | None:
    """The smallest SRAM size whose total traffic is within `fraction` (0.1: 10 %) of compulsory traffic, with no
    unplaceable layer; None when no size is. Its `partial` says when unmodelled layers are left out of it."""
    if fraction < 0:
        raise ValueError(f"--within must be >= 0 %, got {fraction * 100:g} %")
    fits = [r for r in results if not r.unplaceable and r.traffic_bytes <= (1 + fraction) * r.compulsory_bytes]
    return min(fits, key=lambda r: r.sram_bytes) if fits else None


def vary_hardware(bases: Sequence[Accelerator], varies: Sequence[str]) -> list[Accelerator]:
    """The grid of hardware: every base with every combination of `FIELD=V1,V2,...` values (named
    base[field=value,...]); ValueError naming the field or value that is wrong."""
    import dataclasses
    import itertools

    fields = {f.name: f for f in dataclasses.fields(Accelerator) if f.name != "name"}
    axes: list[tuple[str, list[Any]]] = []
    for text in varies:
        key, sep, values = text.partition("=")
        key = key.strip()
        if not sep or not values.strip():
            raise ValueError(f"--vary {text!r}: give FIELD=V1,V2,..., e.g. dram_bytes_per_cycle=16,32,64")
        if key not in fields:
            raise ValueError(f"--vary {text!r}: unknown hardware field {key!r}; fields are {', '.join(fields)}")
        if key in (k for k, _ in axes):  # a second --vary of a field would silently replace the first
            raise ValueError(f"--vary {key} is given twice; list all its values in one --vary {key}=V1,V2,...")
        if key == "sram_bytes":  # the sweep's --sizes sets it for every point
            raise ValueError(f"--vary {text!r}: the SRAM size is what --sizes sweeps; give the sizes there")
        kind = fields[key].type.split(" | ")[0]  # the field's declared type ("float | None": a float or unset)
        if kind not in _VARY_PARSERS:
            raise ValueError(f"--vary {text!r}: {key} ({fields[key].type}) cannot be varied on the command line; "
                             f"give one hardware file per variant (--hardware a.toml,b.toml)")
        parsed = []
        for v in values.split(","):
            v = v.strip()
            try:
                parsed.append(_VARY_PARSERS[kind](v, key))
            except ValueError:
                raise ValueError(f"--vary {text!r}: {v!r} is not a valid {key} ({kind})") from None
        axes.append((key, parsed))
    if not axes:
        return list(bases)
    out = []
    for base in bases:
        for combo in itertools.product(*(values for _, values in axes)):
            change = dict(zip((k for k, _ in axes), combo))
            label = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in change.items())
            try:  # the hardware validates each value (an unknown DRAM type, a negative energy)
                out.append(replace(base, name=f"{base.name}[{label}]", **change))
            except ValueError as err:
                raise ValueError(f"--vary {label}: {err}") from None
    return out


def _vary_bool(text: str, key: str) -> bool:
    """true / false (any case), for --vary."""
    if text.lower() not in ("true", "false"):
        raise ValueError(f"{key}: {text!r} is not true or false")
    return text.lower() == "true"


def _vary_str(text: str, key: str) -> str:
    """A non-empty name (a DRAM type, a dataflow: the hardware checks it is one it knows), for --vary."""
    if not text:
        raise ValueError(f"{key}: empty value")
    return text


def _vary_float(text: str, key: str) -> float:
    """A number, for --vary (the hardware checks its range: a non-finite one is refused there, naming the field)."""
    return float(text)


# how --vary reads a value of each declared field type (fields of other types, e.g. the levels, are refused)
_VARY_PARSERS: dict[str, Any] = {"bool": _vary_bool, "int": lambda text, key: parse_whole(text, key),
                                 "float": _vary_float, "str": _vary_str}


@dataclass(frozen=True)
class NetworkSweep:
    """A network over a grid of hardware (outer) and SRAM sizes (inner), with the smallest size within a
    fraction of compulsory traffic per hardware."""

    network: Network
    hardwares: tuple[Accelerator, ...]
    sizes: tuple[int, ...]
    results: tuple[tuple[NetworkResult, ...], ...]
    within: float | None = None
    # `sweep-sram --simulate-network`: per size of the one hardware, its network simulation (a NetworkSimulation of
    # dsasim.architect.studies.network_simulation, typed Any: that module imports this one) or the one-line reason
    # it has none; () when the network was not simulated
    simulations: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not self.simulations:
            return
        if len(self.hardwares) != 1 or len(self.simulations) != len(self.results[0]):
            raise ValueError(f"a sweep's simulations are one per size of one hardware: got {len(self.simulations)} "
                             f"for {len(self.hardwares)} hardware x {len(self.sizes)} sizes")
        for r, s in zip(self.results[0], self.simulations):
            if not isinstance(s, str) and s.sram_bytes != r.sram_bytes:
                raise ValueError(f"the simulation of a {s.sram_bytes:,} B SRAM is given for the {r.sram_bytes:,} B "
                                 f"size; give them in the sweep's order")

    def energy_points(self, hardware_index: int = 0) -> list[EnergyPoint]:
        """Per SRAM size of one hardware of the grid, its cycles and energy (`NetworkResult.energy_point`)."""
        return [r.energy_point for r in self.results[hardware_index]]

    def sizing(self) -> list[SizingAnswers]:
        """Per hardware, the SRAM sizes with the least energy per inference, the least energy x delay and the best
        performance per mm2 (over the sizes where every modelled layer is placed and counted)."""
        return [SizingAnswers.of(self.energy_points(k)) for k in range(len(self.hardwares))]

    def smallest_within(self) -> list[NetworkResult | None]:
        """Per hardware, the smallest SRAM within `within` of compulsory (None where no size is)."""
        if self.within is None:
            return [None] * len(self.hardwares)
        return [smallest_within(row, self.within) for row in self.results]

    def to_json(self) -> dict[str, Any]:
        """network, sizes, hardware (each one's fields), points (one per hardware and size: totals, partial and
        the layers left out), with --within the answer per hardware (and whether it is partial), and with
        simulations 'simulation': per size its simulation's JSON or {sram_bytes, not_simulated: reason}."""
        import dataclasses

        points = []
        for row in self.results:
            for r in row:
                points.append({"hardware": r.hardware.name, "sram_bytes": r.sram_bytes,
                               "loaded_bytes": r.loaded_bytes, "stored_bytes": r.stored_bytes,
                               "traffic_bytes": r.traffic_bytes, "cycles": r.cycles,
                               "lower_bound_bytes": r.lower_bound_bytes, "compulsory_bytes": r.compulsory_bytes,
                               "partial": r.partial, "unmodelled": r.unmodelled, "unplaceable": r.unplaceable,
                               **r.levels_json(), **energy_json(r.energy), "energy_left_out": r.energy_left_out})
                if r.per_token is not None:  # a token model's layer (an LLM decoder layer, a BERT layer)
                    points[-1]["per_token"] = r.per_token.to_json()
        out: dict[str, Any] = {"network": self.network.name, "sizes": list(self.sizes),
                               "hardware": [dataclasses.asdict(h) for h in self.hardwares], "points": points,
                               "sizing": {h.name: a.to_json() for h, a in zip(self.hardwares, self.sizing())}}
        if self.within is not None:
            answers = list(zip(self.hardwares, self.smallest_within()))
            out["within"] = {"fraction": self.within, "smallest_sram_bytes": {
                h.name: (None if r is None else r.sram_bytes) for h, r in answers},
                # an answer for a network with a layer left out (unmodelled) sizes only the rest of it
                "partial": {h.name: r is not None and r.partial for h, r in answers}}
        if self.simulations:
            out["simulation"] = [{"sram_bytes": r.sram_bytes, "not_simulated": s} if isinstance(s, str) else
                                 s.to_json() for r, s in zip(self.results[0], self.simulations)]
        return out


def sweep_network(network: Network, hardwares: Sequence[Accelerator], sizes: Sequence[int], executor: Any = None,
                  progress: bool = False, within: float | None = None,
                  objective: Objective | str = DEFAULT_OBJECTIVE,
                  fusion: bool = True, estimated_seconds: float | None = None) -> NetworkSweep:
    """`evaluate_network` over a hardware grid and SRAM sizes, as a NetworkSweep (`estimated_seconds` labels the
    progress bar)."""
    if within is not None and within < 0:
        raise ValueError(f"--within must be >= 0 %, got {within * 100:g} %")
    rows = evaluate_network(network, hardwares, sizes, executor, progress, objective, fusion, estimated_seconds)
    return NetworkSweep(network=network, hardwares=tuple(hardwares), sizes=tuple(int(s) for s in sizes),
                        results=tuple(tuple(r) for r in rows), within=within)
