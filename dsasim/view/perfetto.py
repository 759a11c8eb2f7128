"""Export a timing simulation as a Chrome / Perfetto trace (JSON), to open in https://ui.perfetto.dev.

Layout: one process ("dsasim <hardware>"); one thread track per engine (dma-load, dma-store, tensorcore, vector,
and dma-<level> per memory level below the SRAM) holding a complete ("X") slice per operation, named by kind,
tensor and region (e.g. "load image[0:1, 0:16, 0:2, 0:56]", "stage w[0:40, 0:24]"), with bytes, buffer and
cycles as args; counter ("C") tracks: "DDR bandwidth (B/cycle)" with a "load" and a "store" series (averaged over
the result's windows), "SRAM occupancy (B)" with one series per tensor (exact: a value at every change), and
"<level> occupancy (B)" likewise for each level below the SRAM, and "power (W)" with one series per energy component
(each window's average, as the bandwidth; when the result carries energy). OPEN operations take no time on any engine and
are left out. Timestamps are microseconds at the accelerator clock, sorted ascending.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from dsasim.atomic import atomic_path
from dsasim.timing.result import KINDS, SimResult
from dsasim.traced.trace import format_region

PID = 1


def _us(cycles: float, clock_hz: float) -> float:
    """Cycles to microseconds, rounded to a picosecond so the JSON is short and stable."""
    return round(cycles * 1e6 / clock_hz, 6)


def perfetto_events(result: SimResult, name: str | None = None,
                    layers: list[tuple[str, int, int]] | None = None) -> list[dict[str, Any]]:
    """The trace events: metadata first, then slices and counters in timestamp order. `layers` (a network's
    (name, start cycle, end cycle) per entry) adds a "layers" track with one slice each, and the occupancy
    counters then carry one "total" series (a network has hundreds of tensors)."""
    clock = result.clock_hz
    meta: list[dict[str, Any]] = [
        {"ph": "M", "pid": PID, "tid": 0, "name": "process_name",
         "args": {"name": f"dsasim {name or ''} on {result.hardware}".replace("  ", " ")}},
    ]
    for tid, engine in enumerate(result.engines, start=1):
        meta.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": engine}})
        meta.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    timed: list[tuple[float, int, int, dict[str, Any]]] = []
    if layers is not None:
        tid = len(result.engines) + 1
        meta.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": "layers"}})
        meta.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": 0}})
        for k, (layer, start, end) in enumerate(layers):
            ev = {"ph": "X", "pid": PID, "tid": tid, "ts": _us(start, clock), "dur": _us(end - start, clock),
                  "name": layer, "cat": "layer", "args": {"start_cycle": start, "end_cycle": end}}
            timed.append((ev["ts"], 1, -len(layers) + k, ev))
    tensors = result.tensors
    engines = result.op_engine.tolist()
    kinds = result.op_kind.tolist()
    starts = result.op_start.tolist()
    ends = result.op_end.tolist()
    nbytes = result.op_bytes.tolist()
    tensor_ids = result.op_tensor.tolist()
    buffers = result.op_buffer.tolist()
    regions = result.op_regions
    for i, e in enumerate(engines):
        if e < 0:
            continue
        s, t_end = starts[i], ends[i]
        kind = KINDS[kinds[i]]
        args = {"bytes": nbytes[i], "buffer": buffers[i], "start_cycle": s, "end_cycle": t_end}
        ev = {"ph": "X", "pid": PID, "tid": e + 1, "ts": _us(s, clock), "dur": _us(t_end - s, clock),
              "name": f"{kind} {tensors[tensor_ids[i]]}{format_region(regions[i])}", "cat": kind, "args": args}
        timed.append((ev["ts"], 1, i, ev))
    w = result.window_cycles
    load = result.ddr_load_bytes / w
    store = result.ddr_store_bytes / w
    seq = 0
    for k in range(len(load)):
        ev = {"ph": "C", "pid": PID, "name": "DDR bandwidth (B/cycle)", "ts": _us(k * w, clock),
              "args": {"load": round(float(load[k]), 3), "store": round(float(store[k]), 3)}}
        timed.append((ev["ts"], 0, seq, ev))
        seq += 1
    if len(load):
        ev = {"ph": "C", "pid": PID, "name": "DDR bandwidth (B/cycle)", "ts": _us(result.cycles, clock),
              "args": {"load": 0.0, "store": 0.0}}
        timed.append((ev["ts"], 0, seq, ev))
        seq += 1
    power = result.power_w
    if power is not None and power.shape[1]:
        names = result.power_components
        for k in range(power.shape[1]):
            ev = {"ph": "C", "pid": PID, "name": "power (W)", "ts": _us(k * w, clock),
                  "args": {nm: float(f"{power[r, k]:.6g}") for r, nm in enumerate(names)}}
            timed.append((ev["ts"], 0, seq, ev))
            seq += 1
        ev = {"ph": "C", "pid": PID, "name": "power (W)", "ts": _us(result.cycles, clock),
              "args": {nm: 0.0 for nm in names}}
        timed.append((ev["ts"], 0, seq, ev))
        seq += 1
    for level, track in [(0, "SRAM occupancy (B)")] + [(i, f"{lv.name} occupancy (B)")
                                                        for i, lv in enumerate(result.levels, start=1)]:
        for ts, values in _sram_steps(result, level):
            if layers is not None:
                values = {"total": sum(values.values())}
            ev = {"ph": "C", "pid": PID, "name": track, "ts": _us(ts, clock), "args": values}
            timed.append((ev["ts"], 0, seq, ev))
            seq += 1
    timed.sort(key=lambda x: (x[0], x[1], x[2]))
    return meta + [ev for _, _, _, ev in timed]


def _sram_steps(result: SimResult, level: int = 0) -> list[tuple[int, dict[str, int]]]:
    """(cycle, bytes per tensor) at every change of the occupancy of a memory level (0: the SRAM, i: the i-th
    level below it)."""
    tensor, nbytes = result.buffer_tensor, result.buffer_bytes
    start, end = result.buffer_start, result.buffer_end
    if result.buffer_level is not None and (result.buffer_level != level).any():
        mine = result.buffer_level == level
        tensor, nbytes, start, end = tensor[mine], nbytes[mine], start[mine], end[mine]
    elif level:  # (no level information: every buffer is an SRAM buffer)
        return []
    if not len(start):
        return []
    names = [result.tensors[t] for t in tensor.tolist()]
    order_names = sorted(set(names))
    col = {n: k for k, n in enumerate(order_names)}
    times = np.concatenate([start, end])
    deltas = np.concatenate([nbytes, -nbytes])
    cols = np.array([col[n] for n in names] * 2, dtype=np.int64)
    order = np.lexsort((deltas, times))
    current = [0] * len(order_names)
    steps: list[tuple[int, dict[str, int]]] = []
    times_l, deltas_l, cols_l = times[order].tolist(), deltas[order].tolist(), cols[order].tolist()
    n = len(times_l)
    k = 0
    while k < n:
        t = times_l[k]
        while k < n and times_l[k] == t:
            current[cols_l[k]] += deltas_l[k]
            k += 1
        steps.append((t, {nm: current[j] for j, nm in enumerate(order_names)}))
    return steps


def write_perfetto(result: SimResult, path: str | Path, name: str | None = None,
                   layers: list[tuple[str, int, int]] | None = None) -> Path:
    """Write the Chrome/Perfetto JSON trace of `result` to `path` atomically (missing folders are created; `layers`:
    a network's layers track, see `perfetto_events`); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"traceEvents": perfetto_events(result, name, layers), "displayTimeUnit": "ns",
           "otherData": {"generator": "dsasim", "hardware": result.hardware, "cycles": result.cycles,
                         "clock_hz": result.clock_hz}}
    with atomic_path(path) as tmp, tmp.open("w") as f:  # never a truncated trace, even on Ctrl-C
        json.dump(doc, f, separators=(",", ":"))
    return path
