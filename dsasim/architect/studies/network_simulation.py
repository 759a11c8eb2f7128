"""A whole network timed in one timeline: `simulate_network(result, resolve)` -> `NetworkSimulation`.

The network's one trace (`network_trace.trace_network`, its kernels found by `resolve`: the inter-layer rules are
stated there) is lowered and timed
by the timing model as any trace is (model.pyx's rules; `reference=True`: the simpy reference). Per entry, from the
operations of its events:
  * start / end: the first operation's start and the last one's end in the one timeline (operations on engines:
    an OPEN takes no engine and no time); its simulated cycles are
    end - start (its window). Windows of consecutive entries overlap where the next entry's loads run while the
    previous one still computes or stores: `overlap_cycles` (per entry: its start before the latest end of the
    entries run before it; in total: the windows summed minus the network's cycles).
  * traffic: its LOADs' and STOREs' bytes, which must equal the search's figures for the entry (fence words apart;
    with results kept on chip, minus the DDR bytes the kept results saved it, measured on the trace through DDR),
    and on hardware with levels below the SRAM each level's bytes staged in and written back, which must equal the
    level search's (`LayerOutcome.level_bytes`): `simulate_network` raises `NetworkTraceMismatch` naming every
    entry where they differ ("model == trace" across the whole network).
  * stalls: each idle TensorCore gap is charged to the entry whose TensorCore operation ends it, and blamed on a
    cause by the timing model's own attribution (result.py: the critical chain); the idle time after the network's
    last TensorCore operation is "drain", charged to the last entry that has TensorCore operations.
  * roofline: max(its TensorCore busy, its vector busy, its DDR bytes over the port (no setups)), as
    `SimResult.roofline_cycles` is for a whole trace.
The network's DDR bandwidth, SRAM occupancy and energy over time are the one trace's `SimResult` timelines.

`keep_on_chip=True`: the network is traced and timed twice, every result through DDR (checked against the search as
above), then with the results `network_on_chip.plan_on_chip` keeps on chip (its rules are stated there), whose
trace must move, entry by entry, the first trace's bytes minus what the kept results saved. The simulation is the
second; `on_chip` (an `OnChipReport`) holds the plan and the first one's cycles and bytes beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from dsasim.architect.studies.network_trace import NetworkTrace, NetworkTraceError, Resolver, trace_network

__all__ = ["EntryTiming", "NetworkSimulation", "OnChipReport", "NetworkTraceMismatch", "simulate_network", "time_network_trace"]


class NetworkTraceMismatch(NetworkTraceError):
    """The trace of an entry moved other bytes than the search's model counts for it."""


@dataclass(frozen=True)
class EntryTiming:
    """One entry of the network in the one timeline (cycles, bytes)."""

    name: str
    kind: str
    start_cycle: int
    end_cycle: int
    estimated_cycles: int  # the search's analytic estimate for the entry
    roofline_cycles: int
    loaded_bytes: int  # traced, fence words excluded
    stored_bytes: int
    model_loaded_bytes: int
    model_stored_bytes: int
    fence_bytes: int
    tensorcore_busy_cycles: int
    vector_busy_cycles: int
    overlap_cycles: int  # cycles its window starts before the latest end of the entries run before it
    shared_input_bytes: int  # bytes of earlier results it loads (what staying on chip could save it)
    stall_cycles: Mapping[str, int]
    # per level below the SRAM (hardware order): (level, bytes staged in from its parent, bytes written back),
    # traced; equal to the search's (checked like the DDR bytes); () on one-level hardware
    level_bytes: tuple[tuple[str, int, int], ...] = ()
    model_level_bytes: tuple[tuple[str, int, int], ...] = ()  # the search's, the same rows
    # the DDR bytes results kept on chip saved it (None: every result through DDR, the default)
    kept_bytes: tuple[int, int] | None = None

    @property
    def cycles(self) -> int:
        """Its window in the timeline: end - start."""
        return self.end_cycle - self.start_cycle

    @property
    def ratio(self) -> float:
        """Simulated window / analytic estimate (inf for an estimate of 0)."""
        return self.cycles / self.estimated_cycles if self.estimated_cycles else float("inf")

    @property
    def top_stall(self) -> str:
        """The cause of most of its TensorCore's idle cycles ('' when it never waited)."""
        causes = [(v, k) for k, v in self.stall_cycles.items() if v > 0]
        return max(causes, key=lambda vk: (vk[0], [-ord(c) for c in vk[1]]))[1] if causes else ""

    def to_json(self) -> dict[str, Any]:
        """Its figures (ratio rounded to 6 digits)."""
        return {"name": self.name, "kind": self.kind, "start_cycle": self.start_cycle, "end_cycle": self.end_cycle,
                "cycles": self.cycles, "estimated_cycles": self.estimated_cycles,
                "ratio": round(self.ratio, 6) if self.estimated_cycles else None,
                "roofline_cycles": self.roofline_cycles, "loaded_bytes": self.loaded_bytes,
                "stored_bytes": self.stored_bytes, "model_loaded_bytes": self.model_loaded_bytes,
                "model_stored_bytes": self.model_stored_bytes, "fence_bytes": self.fence_bytes,
                "tensorcore_busy_cycles": self.tensorcore_busy_cycles,
                "vector_busy_cycles": self.vector_busy_cycles, "overlap_cycles": self.overlap_cycles,
                "shared_input_bytes": self.shared_input_bytes,
                "stall_cycles": dict(sorted(self.stall_cycles.items())),
                **({"levels": [{"level": t[0], "loaded_bytes": t[1], "stored_bytes": t[2],
                                "model_loaded_bytes": m[1], "model_stored_bytes": m[2]}
                               for t, m in zip(self.level_bytes, self.model_level_bytes)]}
                   if self.level_bytes else {}),
                **({"on_chip_saved_loaded_bytes": self.kept_bytes[0], "on_chip_saved_stored_bytes": self.kept_bytes[1]}
                   if self.kept_bytes is not None else {})}


@dataclass(frozen=True)
class OnChipReport:
    """Results kept on chip: the plan (what is kept, where, what it saves; what is not, and why) and the same
    network simulated with every result through DDR (cycles, DDR bytes loaded and stored)."""

    plan: Any  # network_on_chip.OnChipPlan
    ddr_cycles: int
    ddr_loaded_bytes: int
    ddr_stored_bytes: int

    def to_json(self, cycles: int) -> dict[str, Any]:
        """Its figures beside the simulation's `cycles` with the plan."""
        return {**self.plan.to_json(), "cycles_through_ddr": self.ddr_cycles, "cycles": cycles,
                "loaded_bytes_through_ddr": self.ddr_loaded_bytes, "stored_bytes_through_ddr": self.ddr_stored_bytes}


@dataclass(frozen=True)
class NetworkSimulation:
    """A network's entries timed in one timeline, with the one trace's SimResult (timelines per window)."""

    network: str
    hardware: str
    sram_bytes: int
    entries: tuple[EntryTiming, ...]  # in the order run (`network_trace`: data-flow order)
    sim: Any  # dsasim.timing.SimResult of the whole trace
    on_chip: OnChipReport | None = None  # results kept on chip (`keep_on_chip=True`), else None

    @property
    def cycles(self) -> int:
        """The network's simulated cycles (the last operation's end)."""
        return int(self.sim.cycles)

    @property
    def estimated_cycles(self) -> int:
        """The search's estimates summed (what `dsasim network` reports)."""
        return sum(e.estimated_cycles for e in self.entries)

    @property
    def overlap_cycles(self) -> int:
        """The entries' windows summed minus the network's cycles: time gained by running entries at once."""
        return sum(e.cycles for e in self.entries) - self.cycles

    @property
    def roofline_cycles(self) -> int:
        """The whole trace's roofline (max of TensorCore busy, vector busy, DDR time): never above `cycles`."""
        return int(self.sim.roofline_cycles)

    @property
    def layer_roofline_sum(self) -> int:
        """The entries' own rooflines summed (a bound on the network only where entries do not overlap)."""
        return sum(e.roofline_cycles for e in self.entries)

    @property
    def level_bytes(self) -> list[tuple[str, int, int]]:
        """Per level below the SRAM (hardware order): (level, bytes staged in, bytes written back), traced, the
        entries summed; [] on one-level hardware."""
        names = [row[0] for row in self.entries[0].level_bytes] if self.entries else []
        return [(name, sum(e.level_bytes[i][1] for e in self.entries), sum(e.level_bytes[i][2] for e in self.entries))
                for i, name in enumerate(names)]

    @property
    def fence_bytes(self) -> int:
        return sum(e.fence_bytes for e in self.entries)

    def layer_slices(self) -> list[tuple[str, int, int]]:
        """(name, start cycle, end cycle) per entry, in the order run: the 'layers' track of a timeline view."""
        return [(e.name, e.start_cycle, e.end_cycle) for e in self.entries]

    def ddr_bandwidth(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(window start cycles, loaded bytes per cycle, stored bytes per cycle) over the whole network."""
        w = self.sim.window_cycles
        return self.sim.window_starts, self.sim.ddr_load_bytes / w, self.sim.ddr_store_bytes / w

    def sram_occupancy(self) -> tuple[np.ndarray, np.ndarray]:
        """(window start cycles, time-averaged SRAM bytes per window, all tensors summed)."""
        return self.sim.window_starts, self.sim.sram_occupancy.sum(axis=0)

    def to_json(self) -> dict[str, Any]:
        """Totals, the timelines per window and the entries (deterministic: the same inputs, the same bytes)."""
        sim = self.sim
        starts, occupancy = self.sram_occupancy()
        out: dict[str, Any] = {
            "network": self.network, "hardware": self.hardware, "sram_bytes": self.sram_bytes,
            "cycles": self.cycles, "estimated_cycles": self.estimated_cycles,
            "ratio": round(self.cycles / self.estimated_cycles, 6) if self.estimated_cycles else None,
            "roofline_cycles": self.roofline_cycles, "layer_roofline_sum_cycles": self.layer_roofline_sum,
            "overlap_cycles": self.overlap_cycles, "loaded_bytes": int(sim.loaded_bytes) - self.fence_bytes,
            "stored_bytes": int(sim.stored_bytes), "fence_bytes": self.fence_bytes,
            "model_equals_trace": True,
            **({"levels": [{"level": name, "loaded_bytes": loaded, "stored_bytes": stored}
                           for name, loaded, stored in self.level_bytes]} if self.level_bytes else {}),
            "peak_sram_bytes": int(sim.peak_sram_bytes),
            "stall_cycles": dict(sorted(sim.stall_cycles.items())), "window_cycles": int(sim.window_cycles),
            "ddr_load_bytes": [round(float(x), 3) for x in sim.ddr_load_bytes],
            "ddr_store_bytes": [round(float(x), 3) for x in sim.ddr_store_bytes],
            "sram_occupancy_bytes": [round(float(x), 3) for x in occupancy]}
        if sim.energy_pj is not None:
            out["energy_pj"] = round(float(sim.energy_pj), 3)
            out["window_energy_pj"] = [round(float(x), 3) for x in sim.window_energy_pj.sum(axis=0)]
        if self.on_chip is not None:
            out["on_chip"] = self.on_chip.to_json(self.cycles)
        out["layers"] = [e.to_json() for e in self.entries]
        return out


def time_network_trace(network_trace: NetworkTrace, result: Any, reference: bool = False,
                       window_cycles: int | None = None) -> NetworkSimulation:
    """Time a network's trace in one timeline and cut it into its entries (module docstring);
    NetworkTraceMismatch when an entry's traced bytes differ from the search's."""
    from dsasim.cost import ddr_port, dma_cycles
    from dsasim.timing import build_timeline, lower
    from dsasim.timing._result import CriticalChain
    from dsasim.timing.model import LOAD_OP, STORE_OP, TC_OP, VEC_OP
    from dsasim.timing.result import build_result
    from dsasim.util import gc_paused

    # with a plan, what the kept results saved each entry (measured on the trace through DDR) is not moved
    wrong = [s for s in network_trace.spans
             if s.traced_loaded_bytes - s.fence_bytes != s.model_loaded_bytes - s.kept_loaded_bytes
             or s.traced_stored_bytes != s.model_stored_bytes - s.kept_stored_bytes
             or s.traced_level_bytes != s.model_level_bytes]
    if wrong:
        listed = "; ".join(f"{s.name}: traced {s.traced_loaded_bytes - s.fence_bytes:,} B loaded, "
                           f"{s.traced_stored_bytes:,} B stored, model {s.model_loaded_bytes:,} / "
                           f"{s.model_stored_bytes:,}" + _kept_apart(s) + _levels_differ(s) for s in wrong)
        raise NetworkTraceMismatch(f"model != trace for {len(wrong)} entr{'y' if len(wrong) == 1 else 'ies'} "
                                   f"of {result.network.name}: {listed}")
    hardware, trace = network_trace.hardware, network_trace.trace
    with gc_paused():
        graph = lower(trace, hardware)
        if reference:
            from dsasim.timing.reference import build_timeline_reference
            timeline = build_timeline_reference(trace, hardware, graph)
        else:
            timeline = build_timeline(graph)
        sim = build_result(graph, timeline, hardware, window_cycles, trace)
    spans = network_trace.spans
    firsts = np.array([s.first_event for s in spans], dtype=np.int64)
    # the spans are in run order, so their first events increase: an op's entry is the last span starting at or
    # before its event
    entry = np.searchsorted(firsts, np.asarray(graph.event, dtype=np.int64), side="right") - 1
    n = len(spans)
    starts, ends = timeline.starts, timeline.ends
    dur = ends - starts
    kind = np.asarray(graph.kind)
    first_start = np.full(n, np.iinfo(np.int64).max, np.int64)
    last_end = np.zeros(n, np.int64)
    # an OPEN (a zeroed buffer) runs on no engine and may "start" at 0 where its bytes were never used: the window
    # is the entry's operations on engines
    timed = np.asarray(graph.engine) >= 0
    np.minimum.at(first_start, entry[timed], starts[timed])
    np.maximum.at(last_end, entry[timed], ends[timed])

    def summed(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
        return np.bincount(entry[mask], weights=values[mask], minlength=n).astype(np.int64)

    nbytes = np.asarray(graph.nbytes, dtype=np.int64)
    tc_busy, vec_busy = summed(kind == TC_OP, dur), summed(kind == VEC_OP, dur)
    loaded, stored = summed(kind == LOAD_OP, nbytes), summed(kind == STORE_OP, nbytes)
    stalls = _stalls_per_entry(graph, timeline, entry, n, CriticalChain)
    port = ddr_port(hardware)
    timings, latest = [], 0
    for k, s in enumerate(spans):
        start = int(first_start[k]) if first_start[k] != np.iinfo(np.int64).max else latest
        end = int(last_end[k])
        roof = max(int(tc_busy[k]), int(vec_busy[k]), int(dma_cycles(port, 0, int(loaded[k]), 0, int(stored[k]))))
        timings.append(EntryTiming(
            name=s.name, kind=s.kind, start_cycle=start, end_cycle=end,
            estimated_cycles=int(result.layers[s.index].cycles), roofline_cycles=roof,
            loaded_bytes=int(loaded[k]) - s.fence_bytes, stored_bytes=int(stored[k]),
            model_loaded_bytes=s.model_loaded_bytes, model_stored_bytes=s.model_stored_bytes,
            fence_bytes=s.fence_bytes, tensorcore_busy_cycles=int(tc_busy[k]), vector_busy_cycles=int(vec_busy[k]),
            overlap_cycles=max(0, latest - start) if k else 0, shared_input_bytes=s.reads_on_chip_bytes,
            stall_cycles=stalls[k], level_bytes=s.traced_level_bytes, model_level_bytes=s.model_level_bytes,
            kept_bytes=None if network_trace.plan is None else (s.kept_loaded_bytes, s.kept_stored_bytes)))
        latest = max(latest, end)
    return NetworkSimulation(network=result.network.name, hardware=result.hardware.name,
                             sram_bytes=result.sram_bytes, entries=tuple(timings), sim=sim)


def _kept_apart(span: Any) -> str:
    """' less 1,024 / 512 kept on chip' where kept results saved the entry DDR bytes."""
    if not (span.kept_loaded_bytes or span.kept_stored_bytes):
        return ""
    return f" less {span.kept_loaded_bytes:,} / {span.kept_stored_bytes:,} kept on chip"


def _levels_differ(span: Any) -> str:
    """', L1w: traced 6,144 / 0, model 6,000 / 0' for each level below the SRAM where the entry's bytes differ."""
    return "".join(f", {t[0]}: traced {t[1]:,} / {t[2]:,}, model {m[1]:,} / {m[2]:,}"
                   for t, m in zip(span.traced_level_bytes, span.model_level_bytes) if t != m)


def _stalls_per_entry(graph: Any, timeline: Any, entry: np.ndarray, n: int, chain_type: Any) -> list[dict[str, int]]:
    """Per entry, the TensorCore's idle cycles before its TensorCore operations, by cause (module docstring): the
    network's attribution walk over each entry's run of TensorCore operations, its first gap counted from the end
    of the TensorCore operation before it."""
    queue = np.asarray(graph.queues[graph.tensorcore_engine], dtype=np.int64)
    out: list[dict[str, int]] = [{} for _ in range(n)]
    if not len(queue):
        return out
    chain = chain_type(graph, timeline)
    owner = entry[queue]
    cuts = np.flatnonzero(np.diff(owner)) + 1
    groups = np.split(np.arange(len(queue)), cuts)
    for g in groups:
        k = int(owner[g[0]])
        ops = queue[g]
        after = 0 if g[0] == 0 else int(timeline.ends[queue[g[0] - 1]])
        mine = chain.attribute(ops, int(timeline.ends[ops[-1]]), after)
        for cause, cycles in mine.items():
            if cycles:
                out[k][cause] = out[k].get(cause, 0) + int(cycles)
    last = int(owner[-1])
    drain = int(timeline.cycles) - int(timeline.ends[queue[-1]])
    if drain > 0:
        out[last]["drain"] = out[last].get("drain", 0) + drain
    return out


def simulate_network(result: Any, resolve: Resolver, reference: bool = False,
                     window_cycles: int | None = None, keep_on_chip: bool = False) -> NetworkSimulation:
    """Trace `result` (a NetworkResult: one hardware, one SRAM size) as one session and time it in one timeline
    (`keep_on_chip`: twice, the second with results kept on chip; module docstring); NetworkTraceError (one line)
    for what cannot be traced, NetworkTraceMismatch where model != trace."""
    baseline = trace_network(result, resolve)
    through_ddr = time_network_trace(baseline, result, reference, window_cycles)
    if not keep_on_chip:
        return through_ddr
    from dataclasses import replace

    from dsasim.architect.studies.network_on_chip import plan_on_chip

    plan = plan_on_chip(baseline, result.sram_bytes, levels=bool(result.hardware.inner_levels))
    kept = time_network_trace(trace_network(result, resolve, plan), result, reference, window_cycles)
    report = OnChipReport(plan, through_ddr.cycles, int(through_ddr.sim.loaded_bytes) - through_ddr.fence_bytes,
                          int(through_ddr.sim.stored_bytes))
    return replace(kept, on_chip=report)
