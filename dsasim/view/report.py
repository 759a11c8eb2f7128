"""Reports read from a trace alone: which scope (loop level) moved which tensor's bytes."""

from __future__ import annotations

from dataclasses import dataclass

from dsasim.traced.trace import ALLOC_IN, ENTER, EXIT, HIT, LOAD, SLIDE, STAGE, STORE, WRITEBACK, Trace


@dataclass(frozen=True)
class ScopeTraffic:
    """Bytes one tensor moved from inside one static scope (summed over all its instances)."""

    scope: str  # the scope path joined with '/', or '(top)' outside every scope
    tensor: str
    instances: int  # how many instances of the scope ran
    loaded_bytes: int
    stored_bytes: int
    loads: int
    stores: int
    hits: int
    level: str = "SRAM"  # where the bytes went: DDR <-> SRAM, or between this level below the SRAM and its parent


def traffic_by_scope(trace: Trace) -> list[ScopeTraffic]:
    """Loaded/stored bytes per (innermost scope, tensor, level), in order of first appearance; from events only.
    Below the SRAM, a STAGE counts as a load and a WRITEBACK as a store of the inner buffer's level."""
    stack: list[int] = []
    # (scope id or -1, tensor, level) -> [loaded, stored, loads, stores, hits]
    rows: dict[tuple[int, int, str], list[int]] = {}
    instances: dict[int, int] = {}
    level_of: dict[int, str] = {}  # inner buffers (ALLOC_IN into a scope below the SRAM) -> their level
    for event in trace.events:
        kind = event[0]
        if kind == ENTER:
            stack.append(event[1])
            instances[event[1]] = instances.get(event[1], 0) + 1
        elif kind == EXIT:
            stack.pop()
        elif kind == ALLOC_IN:
            level = trace.scopes[event[7]].level
            if level != "SRAM":
                level_of[event[1]] = level
        elif kind in _MOVES:
            row = rows.setdefault((stack[-1] if stack else -1, event[2], level_of.get(event[1], "SRAM")),
                                  [0, 0, 0, 0, 0])
            if kind == LOAD or kind == SLIDE or kind == STAGE:  # (a slide's nbytes are its new rows)
                row[0] += event[4]
                row[2] += kind != SLIDE or event[4] > 0
            elif kind == STORE or kind == WRITEBACK:
                row[1] += event[4]
                row[3] += 1
            else:
                row[4] += 1
    return [ScopeTraffic(scope=trace.scopes[scope_id].name if scope_id >= 0 else "(top)",
                         tensor=trace.tensors[tensor_id].name, instances=instances.get(scope_id, 0),
                         loaded_bytes=loaded, stored_bytes=stored, loads=loads, stores=stores, hits=hits, level=level)
            for (scope_id, tensor_id, level), (loaded, stored, loads, stores, hits) in rows.items()]


_MOVES = frozenset({LOAD, STORE, HIT, SLIDE, STAGE, WRITEBACK})

