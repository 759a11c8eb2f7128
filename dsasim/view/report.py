"""Reports read from a trace alone: which scope (loop level) moved which tensor's bytes."""

from __future__ import annotations

from dataclasses import dataclass

from dsasim.traced.trace import ENTER, EXIT, HIT, LOAD, SLIDE, STORE, Trace


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


def traffic_by_scope(trace: Trace) -> list[ScopeTraffic]:
    """Loaded/stored bytes per (innermost scope, tensor), in order of first appearance; from events only."""
    stack: list[int] = []
    rows: dict[tuple[int, int], list[int]] = {}  # (scope id or -1, tensor) -> [loaded, stored, loads, stores, hits]
    instances: dict[int, int] = {}
    for event in trace.events:
        kind = event[0]
        if kind == ENTER:
            stack.append(event[1])
            instances[event[1]] = instances.get(event[1], 0) + 1
        elif kind == EXIT:
            stack.pop()
        elif kind == LOAD or kind == STORE or kind == HIT or kind == SLIDE:
            row = rows.setdefault((stack[-1] if stack else -1, event[2]), [0, 0, 0, 0, 0])
            if kind == LOAD or kind == SLIDE:  # (a slide's nbytes are its new rows; one that moves none is no load)
                row[0] += event[4]
                row[2] += kind == LOAD or event[4] > 0
            elif kind == STORE:
                row[1] += event[4]
                row[3] += 1
            else:
                row[4] += 1
    return [ScopeTraffic(scope=trace.scopes[scope_id].name if scope_id >= 0 else "(top)",
                         tensor=trace.tensors[tensor_id].name, instances=instances.get(scope_id, 0),
                         loaded_bytes=loaded, stored_bytes=stored, loads=loads, stores=stores, hits=hits)
            for (scope_id, tensor_id), (loaded, stored, loads, stores, hits) in rows.items()]

