"""Memory levels below the SRAM in the traced memory model: staging, write-back, capacity and traffic per level.

On hardware with inner levels (`Accelerator.inner_levels`, e.g. the `blog-l1` preset's TensorCore weight buffer,
input buffer and accumulator) a schedule opens scopes at a level, in the blog's style:
`with GlobalHierarchy(s, "tile", level="L1w"):`. The rules (docs/model/levels.md):
  1. Every tensor has an operand role: an input's is given by `Session.input(..., role=)` ("input" by
     default, "weight" for weights), outputs and intermediates are "output"; on-chip tensors have none and live in
     the SRAM only. A level holds the roles its `holds` lists; the SRAM holds every role.
  2. `arr[region]` targets the innermost open scope whose level holds arr's role. A live copy of region in
     that level or in a level below it on arr's path (`Accelerator.path`) is a hit, the deepest first (so a
     weight tile held in L1w is read there even from inside a later SRAM scope). Otherwise: in the SRAM, the
     one-level rule (a DDR load or a zero-open); in an inner level, region is staged from the parent level,
     where it resolves in the parent level's innermost open scope (a hit, or a load that itself comes from
     DDR), into a new buffer of the target scope: a STAGE of its bytes, or a zero-fill (OPEN, no transfer) for
     a writable region no compute and no write-back has written yet.
  3. A modified inner buffer is written back (WRITEBACK) into the parent buffer it was staged from, exactly
     once per modification: when its scope exits or a reuse load replaces it. That parent buffer becomes
     modified in turn (stored to DDR at its own scope's exit, as in one level).
  4. A buffer always goes to its level's innermost open scope, so each level's buffers form a stack of their
     own (scopes of different levels interleave freely: a weight held in L1w across loops whose SRAM scopes
     come and go), and its live footprint (bytes x ways) never exceeds the level's `capacity_bytes`
     (SramOverflowError naming the level and its live buffers).
  5. The TensorCore reads its operands from the innermost level of their role's path (`Accelerator.path`):
     a weight tile in the SRAM on `blog-l1` is an error that says which level to stage it in.
Coherence as in one level: two modified copies of an element, a read of the SRAM under a modified inner copy,
or a write-back into a parent buffer reloaded meanwhile, is a CoherenceError; a write into one copy makes the
other inner copies of those elements stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsasim.errors import CoherenceError, LevelError, RegionError, ReuseError, SramOverflowError
from dsasim.hardware import ROLES, SRAM_LEVEL, Accelerator, MemoryLevel
from dsasim.traced._core import ArrayFields, Buffer, ScopeInstance, TileFields
from dsasim.traced.level_host import LevelHost
from dsasim.traced.live_buffers import LiveBuffers
from dsasim.traced.stored_elements import StoredElements
from dsasim.traced.trace import format_region
from dsasim.util import format_bytes, region_elements

__all__ = ["LevelTraffic", "LevelState", "check_role"]


def check_role(name: str, role: Any) -> str:
    """An input's operand role, or ValueError naming the roles."""
    if role not in ROLES or role == "output":
        raise ValueError(f"input {name!r}: role must be \"input\" or \"weight\" (the TensorCore operand it feeds), "
                         f"got {role!r}; outputs and intermediates are \"output\"")
    return role


@dataclass
class LevelTraffic:
    """One inner level's traffic with its parent level, in bytes and counts, and its peak footprint in bytes."""

    level: str
    parent: str
    loaded_bytes: int = 0  # staged in from the parent (STAGE)
    stored_bytes: int = 0  # written back to the parent (WRITEBACK)
    rmw_bytes: int = 0  # staged bytes of partial results that were then modified again
    loads: int = 0
    stores: int = 0
    hits: int = 0
    opens: int = 0  # zero-fills: a writable region nothing wrote yet, no transfer
    peak_bytes: int = 0
    per_tensor: dict[str, dict[str, int]] = field(default_factory=dict)
    # the compute units' reads and writes of each tensor's buffers in this level: tensor -> [read, write] elements
    operand_elements: dict[str, list[int]] = field(default_factory=dict)

    COUNTS = ("loaded_bytes", "stored_bytes", "rmw_bytes", "loads", "stores", "hits", "opens")

    def add(self, tensor: str, name: str, amount: int) -> None:
        """Add `amount` to counter `name`, in all and for `tensor`."""
        setattr(self, name, getattr(self, name) + amount)
        counts = self.per_tensor.get(tensor)
        if counts is None:
            counts = self.per_tensor[tensor] = dict.fromkeys(self.COUNTS, 0)
        counts[name] += amount

    def add_operand(self, tensor: str, read_elements: int, write_elements: int) -> None:
        """A compute read `read_elements` and wrote `write_elements` of `tensor` in this level."""
        counts = self.operand_elements.get(tensor)
        if counts is None:
            counts = self.operand_elements[tensor] = [0, 0]
        counts[0] += read_elements
        counts[1] += write_elements

    def to_json(self) -> dict[str, Any]:
        """The counters as plain JSON (tensors sorted by name)."""
        out: dict[str, Any] = {"level": self.level, "parent": self.parent}
        out.update({name: getattr(self, name) for name in self.COUNTS + ("peak_bytes",)})
        out["per_tensor"] = {name: dict(self.per_tensor[name]) for name in sorted(self.per_tensor)}
        return out


class LevelState:
    """The inner levels' side of a Session: roles, live buffers, footprints, write-back marks and counters."""

    def __init__(self, hardware: Accelerator, enforce_capacity: bool) -> None:
        """The levels of `hardware` with nothing live, their capacities enforced or not (bytes)."""
        self.hardware = hardware
        self.levels: dict[str, MemoryLevel] = {lv.name: lv for lv in hardware.inner_levels}
        self.capacity = {name: (lv.capacity_bytes if enforce_capacity else float("inf"))
                         for name, lv in self.levels.items()}
        self.live_bytes = dict.fromkeys(self.levels, 0)
        self.live: dict[tuple[str, int], LiveBuffers] = {}  # (level, tensor id) -> arr's live buffers there
        self.roles: dict[int, str | None] = {}  # tensor id -> its role (None: on chip, SRAM only)
        self.written: dict[int, StoredElements] = {}  # tensor id -> elements a compute or write-back wrote
        self.traffic = {name: LevelTraffic(name, lv.parent) for name, lv in self.levels.items()}
        # per role, the levels of its path by depth (None: the SRAM, depth 0); an on-chip tensor (role None)
        # has the SRAM only
        self.rank: dict[str | None, dict[str | None, int]] = {None: {None: 0}}
        for role in ROLES:
            self.rank[role] = {(None if lv.name == SRAM_LEVEL else lv.name): depth
                               for depth, lv in enumerate(hardware.path(role))}
        # per role and level of its path, the inner levels at or below it on the path, the deepest first
        self.at_or_below = {role: {level: [lv for lv in sorted(rank, key=rank.get, reverse=True)
                                           if lv is not None and rank[lv] >= depth]
                                   for level, depth in rank.items()} for role, rank in self.rank.items()}
        # per role, the level the TensorCore reads that operand from (rule 5): the last of its path
        self.deepest = {role: hardware.path(role)[-1].name for role in ROLES}

    # -- scopes ------------------------------------------------------------------------------------------------
    def check_ways(self, path: tuple[str, ...], level: str | None, ways: int) -> None:
        """The ways a scope at `level` (None: SRAM) asks for are within the level's max_ways."""
        if level is not None and ways > self.levels[level].max_ways:
            raise LevelError(f"scope {'/'.join(path)}: {ways} ways at level {level}, which allows at most "
                             f"{self.levels[level].max_ways} (its max_ways)")

    # -- resolution --------------------------------------------------------------------------------------------
    def target(self, session: LevelHost, arr: ArrayFields, region: tuple) -> int:
        """Index in the scope stack of the innermost scope whose level holds arr's role (rule 2)."""
        rank = self.rank[self.roles.get(arr.id)]
        stack = session.scope_stack
        for idx in range(len(stack) - 1, -1, -1):
            if stack[idx].level in rank:
                return idx
        if not stack:
            session.current_scope(arr, region)  # the one-level error: outside any scope
        role = self.roles.get(arr.id)
        levels = sorted({inst.level for inst in stack})
        raise RegionError(f"{arr.name}{format_region(region)} (role {role}) is accessed only inside scopes at "
                          f"levels {levels}, none of which holds {role}s; open an SRAM scope "
                          f"(`with GlobalHierarchy(s):`) around them for it")

    def hit_below(self, session: LevelHost, arr: ArrayFields, region: tuple, level: str | None,
                  reuse: bool) -> Buffer | None:
        """A hit on a live copy of region in an inner level at or below `level` on arr's path, the deepest
        first (rule 2), or None."""
        for name in self.at_or_below[self.roles.get(arr.id)][level]:
            live = self.live.get((name, arr.id))
            buf = live.containing(region) if live else None
            if buf is not None:
                self.traffic[name].add(arr.name, "hits", 1)
                session.event_log.hit(buf.id, arr.id, region, reuse)
                return buf
        return None

    def live_of(self, level: str, arr: ArrayFields) -> LiveBuffers:
        """arr's live buffers in `level` (created empty on first use)."""
        key = (level, arr.id)
        live = self.live.get(key)
        if live is None:
            live = self.live[key] = LiveBuffers(arr.shape)
        return live

    def check_no_dirty_copy(self, arr: ArrayFields, region: tuple, spare: "Buffer | None" = None) -> None:
        """CoherenceError if a modified inner copy of an element of `region` exists (other than `spare`, which
        the caller writes back first): the copy it is about to read would miss that change."""
        if not arr.writable:
            return
        for level in self.levels:
            live = self.live.get((level, arr.id))
            if not live:
                continue
            refuse_modified_overlap(arr, region, live.overlapping(region), spare, "is read while", "written back",
                                    f" in {level}")

    def stage(self, session: LevelHost, arr: ArrayFields, region: tuple, elements: int, reuse: bool,
              idx: int) -> Buffer:
        """Resolve region in the inner-level scope at stack index `idx` (rule 2): a hit, a STAGE or a zero-fill."""
        inst = session.scope_stack[idx]
        level = inst.level
        live = self.live_of(level, arr)
        traffic = self.traffic[level]
        buf = live.containing(region) if live.by_id else None
        if buf is not None:
            traffic.add(arr.name, "hits", 1)
            session.event_log.hit(buf.id, arr.id, region, reuse)
            return buf
        held = inst.held.get(arr.id) if reuse else None
        self.check_no_dirty_copy(arr, region, held)
        source = self._parent_copy(session, arr, region, elements, idx, level)
        nbytes = elements * session.word_bytes
        if held is None:
            buf = self._allocate(session, arr, region, nbytes, inst, live)
        else:
            buf = held
            if nbytes > buf.nbytes:
                raise ReuseError(
                    f"{arr.name}{format_region(region)} ({nbytes:,} B) does not fit the {level} buffer it reuses "
                    f"(buffer {buf.id}, {buf.nbytes:,} B, allocated for {format_region(buf.region)}); access the "
                    f"largest tile first or drop the reuse flag")
            if buf.dirty:
                self.write_back(session, buf)
            buf.generation += 1
            buf.stale = False
            live.move(buf, region)
        buf.source = source
        buf.source_generation = source.generation
        written = self.written.get(arr.id)
        if arr.writable and (written is None or not written.any_in(region)):
            buf.loaded_from_ddr = False
            buf.load_bytes = 0
            buf.fresh_elements = elements
            buf.fresh_mask = None
            if session.numeric:
                buf.data = np.zeros(tuple(b - a for a, b in region), session.dtype)
            traffic.add(arr.name, "opens", 1)
            session.event_log.open(buf.id, arr.id, region, reuse)
            return buf
        buf.loaded_from_ddr = True  # (from its parent level: a later write is a read-modify-write there)
        buf.load_bytes = nbytes
        buf.fresh_elements = 0
        buf.fresh_mask = None
        if session.numeric:
            view = source.data[_within(region, source.region)]
            buf.data = view.copy() if arr.writable else view
        traffic.add(arr.name, "loaded_bytes", nbytes)
        traffic.add(arr.name, "loads", 1)
        session.event_log.stage(buf.id, arr.id, region, nbytes, source.id)
        return buf

    def _parent_copy(self, session: LevelHost, arr: ArrayFields, region: tuple, elements: int, idx: int,
                     level: str) -> "Buffer":
        """The parent level's buffer holding region, resolved in the parent level's innermost open scope."""
        parent = self.levels[level].parent
        want = None if parent == SRAM_LEVEL else parent
        stack = session.scope_stack
        for j in range(len(stack) - 1, -1, -1):
            if stack[j].level == want:
                if want is None:
                    return session.access_in(arr, region, elements, False, stack[j]).buffer
                return self.stage(session, arr, region, elements, False, j)
        raise RegionError(f"{arr.name}{format_region(region)} is staged into {level} in scope "
                          f"{'/'.join(stack[idx].path)}, but no scope of its parent level {parent} is open: the "
                          f"data comes through {parent}, so open a {parent} scope around it (e.g. "
                          f"`with GlobalHierarchy(s{'' if want is None else ', level=' + repr(parent)}):`)")

    def _allocate(self, session: LevelHost, arr: ArrayFields, region: tuple, nbytes: int,
                  inst: ScopeInstance, live: LiveBuffers) -> "Buffer":
        """A new buffer of `inst`'s level (its own stack of bytes, like the SRAM's)."""
        level = inst.level
        charged = nbytes * inst.ways
        used = self.live_bytes[level] + charged
        if used > self.capacity[level]:
            self._overflow(session, arr, region, charged, inst)
        self.live_bytes[level] = used
        traffic = self.traffic[level]
        if used > traffic.peak_bytes:
            traffic.peak_bytes = used
        address = used - charged + (inst.instance % inst.ways) * nbytes
        buf = Buffer(session.take_buffer_id(), arr, region, nbytes, charged)
        buf.level = level
        inst.buffers.append(buf)
        inst.held[arr.id] = buf
        live.add(buf)
        session.event_log.alloc_in(buf.id, arr.id, region, nbytes, address, charged, inst.scope_id)
        return buf

    def _overflow(self, session: LevelHost, arr: ArrayFields, region: tuple, charged: int,
                  inst: ScopeInstance) -> None:
        level = inst.level
        live = [(buf.tensor.name, format_region(buf.region), buf.charged_bytes, "/".join(scope.path))
                for scope in session.scope_stack for buf in scope.buffers if buf.level == level]
        lines = "".join(f"\n  {t}{r}: {b:,} B in scope {s}" for t, r, b, s in live) or " none"
        ways = f" ({inst.ways}-way buffered)" if inst.ways > 1 else ""
        raise SramOverflowError(
            f"{level} overflow: allocating {charged:,} B for {arr.name}{format_region(region)}{ways} in scope "
            f"{'/'.join(inst.path)} would make {level}'s live footprint {self.live_bytes[level] + charged:,} B > "
            f"its capacity {self.capacity[level]:,} B ({format_bytes(self.capacity[level])}). Live {level} buffers "
            f"({self.live_bytes[level]:,} B):{lines}\n"
            f"Use smaller tiles in {level}, or tighter {level} scopes.", self.capacity[level], charged, live)

    # -- writes ------------------------------------------------------------------------------------------------
    def wrote(self, buf: "Buffer", region: tuple) -> None:
        """A compute or a write-back wrote `region` into `buf`: other inner copies of it are stale (rule 5)."""
        arr = buf.tensor
        if arr.scratch:
            return
        for level in self.levels:
            live = self.live.get((level, arr.id))
            if not live:
                continue
            for other in live.overlapping(region):
                if other is buf or other is buf.source:
                    continue
                if other.dirty:
                    raise CoherenceError(
                        f"two live modified copies of {arr.name} overlap: {format_region(region)} (buffer "
                        f"{buf.id}, {buf.level or SRAM_LEVEL}) and {format_region(other.region)} (buffer "
                        f"{other.id}, {level}); writing one back would overwrite the other's results. Give each "
                        f"output element one modified copy at a time.")
                other.stale = True
        if buf.level is None:  # a compute into the SRAM: the data there is no longer what DDR or zeros held
            self._mark(arr, region)

    def _mark(self, arr: ArrayFields, region: tuple) -> None:
        written = self.written.get(arr.id)
        if written is None:
            written = self.written[arr.id] = StoredElements(arr.shape)
        written.add(region)

    def write_back(self, session: LevelHost, buf: "Buffer") -> None:
        """WRITEBACK a modified inner buffer into the parent buffer it was staged from (rule 3)."""
        arr, region, target = buf.tensor, buf.region, buf.source
        if target.freed or target.generation != buf.source_generation:
            why = ("was freed when its scope exited" if target.freed else
                   "was reloaded with another region (reuse flag)")
            raise CoherenceError(
                f"{arr.name}{format_region(region)}: modified buffer {buf.id} in {buf.level} must be written back "
                f"into {target.level or SRAM_LEVEL} buffer {target.id}, which {why} meanwhile; keep the buffer it "
                f"was staged from live (its scope enclosing) until this one's scope ends")
        nbytes = region_elements(region) * session.word_bytes
        buf.dirty = False  # (before the parent is marked written: this copy is no rival of it)
        session.mark_region_written(target, region)
        if target.data is not None:
            target.data[_within(region, target.region)] = buf.data
        self._mark(arr, region)
        traffic = self.traffic[buf.level]
        traffic.add(arr.name, "stored_bytes", nbytes)
        traffic.add(arr.name, "stores", 1)
        session.event_log.writeback(buf.id, arr.id, region, nbytes, target.id)

    def count_rmw(self, buf: "Buffer") -> None:
        """A staged buffer of partial results is modified: its staged bytes were a read-modify-write."""
        self.traffic[buf.level].add(buf.tensor.name, "rmw_bytes", buf.load_bytes)

    def release(self, buf: "Buffer") -> None:
        """A freed inner buffer leaves its level."""
        self.live[(buf.level, buf.tensor.id)].remove(buf)
        self.live_bytes[buf.level] -= buf.charged_bytes

    # -- the TensorCore ----------------------------------------------------------------------------------------
    def check_operands(self, product: Any, out: TileFields) -> None:
        """The TensorCore reads each operand from the innermost level of its role's path (rule 5)."""
        deepest_of = self.deepest
        for tile, role in ((product.inputs[0], "input"), (product.inputs[1], "weight"), (out, "output")):
            buf = tile.buffer
            arr = buf.tensor
            declared = self.roles.get(arr.id)
            if declared is None:
                continue  # an on-chip tensor: the SRAM is its only level
            if declared != role:
                raise LevelError(f"tensorcore.{product.op}: {arr.name} is its {role} operand, but its role is "
                                 f"{declared!r}; declare it with s.input({arr.name!r}, data, role={role!r}) so that "
                                 f"it goes through the {role}s' levels")
            deepest = deepest_of[role]
            where = buf.level or SRAM_LEVEL
            if where != deepest:
                raise LevelError(
                    f"tensorcore.{product.op}: operand {arr.name}{format_region(tile.region)} is in {where}, but on "
                    f"{self.hardware.name} the TensorCore reads {role}s from {deepest} only; take the tile inside "
                    f"`with GlobalHierarchy(s, name, level={deepest!r}):`")


def refuse_modified_overlap(arr: ArrayFields, region: tuple, candidates: Any, spare: Any, what: str,
                            pending: str, where: str = "") -> None:
    """CoherenceError if a buffer among `candidates` (buffers overlapping region; `spare` excepted) holds modified
    data not `pending` yet (stored, written back): the copy about to be read would miss that change."""
    for buf in candidates:
        if buf.dirty and buf is not spare:
            raise CoherenceError(
                f"{arr.name}{format_region(region)} {what} buffer {buf.id}{where} holds modified data for "
                f"{format_region(buf.region)} that overlaps it and is not {pending} yet; access a region inside "
                f"that buffer, or let its scope end first")


def _within(region: tuple, outer: tuple) -> tuple[slice, ...]:
    """Slices selecting `region` inside an array that holds `outer`."""
    return tuple(slice(a - o, b - o) for (a, b), (o, _) in zip(region, outer))
