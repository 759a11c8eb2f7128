"""Which results of a network stay on chip for the layers that read them: `plan_on_chip(trace, result)` ->
`OnChipPlan`.

The plan is made from the network's trace with every result through DDR (`network_trace.trace_network` without a
plan), which the search's model was checked equal to, entry by entry. Its rules (each stated again beside its code):
  * Candidates. A layer's result (its DDR tensor in that trace) that a later entry reads. The network's last
    result, and any result no entry reads, goes to DDR (it is the network's output, or nothing on chip needs it).
  * Readers in place. A result is kept only if every entry that reads it can read it where it is: the result's
    own tensor (the activations-shared rule of `network_trace`), or a sliding or strided reader of its shape (a
    rotating buffer or a strided box of a kept buffer is a hit: every row is on chip). A reader of another shape
    (a flatten, a view, attention's heads) or a batched layer's repeats read a copy fenced after the producer:
    the result must then be in DDR, so it is not kept (the reason names the reader). One-level hardware only: on
    levels below the SRAM every reader reads a copy staged by role.
  * Lifetime. A kept result holds one SRAM buffer of its whole size from its producer's start to the end of its
    last reader (in the order run), at a fixed place: from the top of the SRAM down, each at the highest address
    that no other kept result live at the same time holds (first fit from the top). The layers' own buffers grow
    from address 0 (the session's SRAM is a stack), so a kept result never moves and never splits.
  * Fit. It is kept only if, for every entry while it is held, the entry's own peak SRAM bytes in the DDR trace
    (measured there, scopes and ways included) stay below the lowest kept byte live during that entry. An entry's
    peak with results kept is never above its peak through DDR (its accesses to a kept result are hits: no
    buffer of its own), so the check is safe. Results are placed greedily in the order their producers run.
  * What it saves: the DDR bytes the trace through DDR moved of that tensor, per entry: its producer's stores
    (and any partial sums it loaded back), every reader's loads, its sliding and strided readers' loads of their
    copies (their fence words are left out of every comparison, as always). The trace with the plan must move exactly
    the bytes of the trace through DDR minus those, entry by entry (`network_simulation` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["KeptResult", "NotKept", "OnChipPlan", "check_keep_on_chip", "plan_on_chip"]


@dataclass(frozen=True)
class KeptResult:
    """A result held in the SRAM from its producer's start to its last reader's end (bytes, the entries' names)."""

    name: str  # the producer's result (the layer's name)
    nbytes: int
    address: int  # its first byte in the SRAM
    producer: str  # the entry that writes it
    readers: tuple[str, ...]  # the entries that read it, in the order run
    saved_loaded_bytes: int  # its readers' (and producer's) DDR loads of it in the trace through DDR
    saved_stored_bytes: int  # its producer's DDR stores of it there

    def __post_init__(self) -> None:
        if self.nbytes <= 0 or self.address < 0 or not self.readers:
            raise ValueError(f"kept result {self.name}: needs bytes > 0, an address >= 0 and a reader")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "bytes": self.nbytes, "address": self.address, "producer": self.producer,
                "readers": list(self.readers), "saved_loaded_bytes": self.saved_loaded_bytes,
                "saved_stored_bytes": self.saved_stored_bytes}


@dataclass(frozen=True)
class NotKept:
    """A result that goes through DDR, and why (one of REASONS, and the words naming the entry concerned)."""

    name: str
    reason: str  # a key of REASONS
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason, "detail": self.detail}


# the reasons a result goes through DDR (key: a short word for tables)
REASONS = {
    "output": "the network's output (or read by no later entry): it goes to DDR",
    "copy": "an entry reads a copy of it (another shape, a batched layer, attention's heads), fenced after its "
            "producer: it must be in DDR",
    "no-fit": "it does not fit beside an entry's own buffers while it is held",
    "levels": "hardware with levels below the SRAM: every reader reads a copy staged into the inner levels",
}


@dataclass(frozen=True)
class OnChipPlan:
    """The results kept on chip (with their places and savings) and those that go through DDR (with why)."""

    kept: tuple[KeptResult, ...]
    not_kept: tuple[NotKept, ...]
    # per entry that a kept result saves DDR bytes (in the order run): (entry, bytes loaded, bytes stored)
    saved_by_entry: tuple[tuple[str, int, int], ...] = ()

    def kept_named(self, name: str) -> KeptResult | None:
        return next((k for k in self.kept if k.name == name), None)

    @property
    def saved_loaded_bytes(self) -> int:
        return sum(k.saved_loaded_bytes for k in self.kept)

    @property
    def saved_stored_bytes(self) -> int:
        return sum(k.saved_stored_bytes for k in self.kept)

    def to_json(self) -> dict[str, Any]:
        return {"kept": [k.to_json() for k in self.kept], "not_kept": [n.to_json() for n in self.not_kept],
                "saved_loaded_bytes": self.saved_loaded_bytes, "saved_stored_bytes": self.saved_stored_bytes}


def check_keep_on_chip(hardware: Any) -> None:
    """ValueError (one line, for the command that asked) where results cannot be kept on chip: hardware with levels
    below the SRAM (rule: one-level hardware only)."""
    if hardware.inner_levels:
        raise ValueError(f"--keep-on-chip keeps results in the SRAM of one-level hardware; {hardware.name} has levels "
                         f"below the SRAM, where every reader stages a copy of its input by role: leave out "
                         f"--keep-on-chip")


def plan_on_chip(trace: Any, sram_bytes: int, levels: bool = False) -> OnChipPlan:
    """The results of a network trace through DDR (`NetworkTrace`, no plan) kept on chip by the module's rules, in
    an SRAM of `sram_bytes` (`levels`: the hardware has levels below the SRAM, where nothing is kept)."""
    spans = trace.spans
    position = {s.name: k for k, s in enumerate(spans)}
    kept: list[KeptResult] = []
    not_kept: list[NotKept] = []
    live: list[tuple[int, int, int, int]] = []  # (first entry, last entry, start byte, end byte) of kept results
    for k, span in enumerate(spans):
        for name, nbytes in span.results:
            # rule (candidates): read by a later entry
            readers = [s for s in spans[k + 1:] if any(t == name and loaded for t, loaded, _ in s.result_bytes)]
            if levels:
                not_kept.append(NotKept(name, "levels", REASONS["levels"]))
                continue
            if name in trace.copied:  # rule (shared readers only)
                not_kept.append(NotKept(name, "copy", f"{trace.copied[name]} reads a copy of it (another shape, a "
                                                      f"batched layer, attention's heads): it must be in DDR"))
                continue
            if not readers:
                not_kept.append(NotKept(name, "output", REASONS["output"]))
                continue
            last = position[readers[-1].name]
            address = _first_fit_from_top(live, k, last, nbytes, sram_bytes)
            worst = _worst_entry(spans, live, k, last, address)  # rule (fit)
            if address < 0 or worst is not None:
                why = (f"{nbytes:,} B do not fit in {sram_bytes:,} B beside the results kept then" if address < 0 else
                       f"{worst[0]} needs {worst[1]:,} B of its own while it is held; the results kept then leave "
                       f"{worst[2]:,} B")
                not_kept.append(NotKept(name, "no-fit", why))
                continue
            live.append((k, last, address, address + nbytes))
            saved_loaded = sum(loaded for s in spans[k:last + 1] for t, loaded, _ in s.result_bytes if t == name)
            saved_stored = sum(stored for s in spans[k:last + 1] for t, _, stored in s.result_bytes if t == name)
            kept.append(KeptResult(name=name, nbytes=nbytes, address=address, producer=span.name,
                                   readers=tuple(r.name for r in readers), saved_loaded_bytes=saved_loaded,
                                   saved_stored_bytes=saved_stored))
    names = {k.name for k in kept}
    saved_by_entry = []
    for span in spans:
        loaded = sum(b for t, b, _ in span.result_bytes if t in names)
        stored = sum(b for t, _, b in span.result_bytes if t in names)
        if loaded or stored:
            saved_by_entry.append((span.name, loaded, stored))
    return OnChipPlan(tuple(kept), tuple(not_kept), tuple(saved_by_entry))


def _first_fit_from_top(live: list[tuple[int, int, int, int]], first: int, last: int, nbytes: int,
                        sram_bytes: int) -> int:
    """Rule (lifetime): the highest start byte where `nbytes` overlap no kept result live during entries
    [first, last] (-1: none above address 0)."""
    busy = [(start, end) for f, l, start, end in live if f <= last and first <= l]
    # the highest free place is the top or just below a busy buffer
    for address in sorted({sram_bytes - nbytes, *(start - nbytes for start, _ in busy)}, reverse=True):
        if address >= 0 and all(address >= end or start >= address + nbytes for start, end in busy):
            return address
    return -1


def _worst_entry(spans: Any, live: list[tuple[int, int, int, int]], first: int, last: int,
                 address: int) -> tuple[str, int, int] | None:
    """Rule (fit): the first entry in [first, last] whose own peak SRAM bytes exceed the lowest kept byte live
    then (this result at `address` included): (its name, its peak, the bytes left below); None when all fit."""
    for j in range(first, last + 1):
        floor = min([address] + [start for f, l, start, _ in live if f <= j <= l])
        if spans[j].peak_sram_bytes > floor:
            return spans[j].name, spans[j].peak_sram_bytes, floor
    return None
