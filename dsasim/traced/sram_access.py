"""How a Session resolves an access in the SRAM (`SramAccess`, Session's base class): a hit on a live buffer, a DMA
load or a zero-open into a new buffer, a reuse load, a strided box, a slide of a rotating buffer; allocating
buffers against the SRAM's capacity, and storing modified ones (rules 3 to 7 of `dsasim.traced.session`).

These are the pure-Python reference of the compiled core's hot path (`_core.access`, see `session._bind_core`),
and the path every access takes on hardware with memory levels below the SRAM. The state they work on is the
Session's (made in `Session.__init__`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dsasim.errors import CoherenceError, ReadOnlyError, RegionError, ReuseError, SramOverflowError
from dsasim.traced import _core
from dsasim.traced.levels import refuse_modified_overlap
from dsasim.traced.regions import (integral_region, normalize_region, region_slices, requested_elements,
                                   strided_within)
from dsasim.traced.stored_elements import StoredElements
from dsasim.traced.tile import Buffer, Tile
from dsasim.traced.trace import Region, format_region
from dsasim.traced.traced_array import TracedArray
from dsasim.util import format_bytes, region_elements

__all__ = ["SramAccess"]

ScopeInstance = _core.ScopeInstance  # one execution of a scope (a C class: the compiled core reads its fields)


class SramAccess(_core.SessionFields):
    """The SRAM side of a `Session`: accesses, slides, buffer allocation, stores and writes (see the module)."""

    def current_scope(self, arr: TracedArray, region: Region) -> ScopeInstance:
        """The scope instance an SRAM buffer for `region` of `arr` goes to: the innermost open one (on hardware with
        inner levels, the innermost SRAM one); RegionError outside any."""
        if not self._stack:
            raise RegionError(f"{arr.name}{format_region(region)} accessed outside any GlobalHierarchy scope; "
                              f"wrap the access in `with GlobalHierarchy(session):` so its SRAM buffer has a "
                              f"lifetime")
        if self._levels is not None:  # on-chip and sliding buffers live in the SRAM
            for inst in reversed(self._stack):
                if inst.level is None:
                    return inst
            raise RegionError(f"{arr.name}{format_region(region)} needs an SRAM buffer but is accessed only inside "
                              f"scopes of levels below the SRAM; open an SRAM scope (`with GlobalHierarchy(s):`) "
                              f"around them")
        return self._stack[-1]


    def _allocate(self, arr: TracedArray, region: Region, nbytes: int, inst: ScopeInstance,
                  strided: bool = False) -> Buffer:
        """A new buffer of `nbytes` holding `region` in scope instance `inst` (a strided one: kept in `_strided`,
        out of the tensor's dense live buffers)."""
        charged = nbytes * inst.ways
        live = self._live_bytes + charged
        if live > self._sram_limit:
            self._overflow(arr, region, charged, inst)
        self._live_bytes = live
        counters = self.counters
        if live > counters.peak_sram_bytes:
            counters.peak_sram_bytes = live
        # Buffers are freed in exactly the reverse order of allocation (scopes nest, a scope frees all its
        # buffers), so SRAM is a stack: this buffer's block starts at the old top. An N-way scope's block holds
        # N copies; instance i uses copy i mod N, so consecutive instances never share bytes.
        address = live - charged + (inst.instance % inst.ways) * nbytes
        buf = Buffer(self._next_buffer, arr, region, nbytes, charged)
        self._next_buffer += 1
        inst.buffers.append(buf)
        inst.held[arr.id] = buf
        if strided:
            self._strided.setdefault(arr.id, []).append(buf)
        else:
            arr.live.add(buf)
        if self._levels is None:
            self._log.alloc(buf.id, arr.id, region, nbytes, address, charged)
        else:  # the scope need not be the innermost one: the event names it
            self._log.alloc_in(buf.id, arr.id, region, nbytes, address, charged, inst.scope_id)
        return buf

    def _overflow(self, arr: TracedArray, region: Region, charged: int, inst: ScopeInstance) -> None:
        live = []
        for scope in self._stack:
            for buf in scope.buffers:
                live.append((buf.tensor.name, format_region(buf.region), buf.charged_bytes, "/".join(scope.path)))
        # past a screenful, group the buffers of one tensor in one scope (the exception's .live lists each)
        grouped = len(live) > 32
        groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for tensor, reg, nbytes, scope in live:
            groups.setdefault((tensor, scope), []).append((reg, nbytes))
        lines = []
        for (tensor, scope), bufs in groups.items():
            if grouped and len(bufs) > 1:
                total = sum(nbytes for _, nbytes in bufs)
                lines.append(f"  {tensor}: {len(bufs)} buffers, {total:,} B in scope {scope} ({bufs[0][0]} ... "
                             f"{bufs[-1][0]})")
            else:
                lines.extend(f"  {tensor}{reg}: {nbytes:,} B in scope {scope}" for reg, nbytes in bufs)
        listing = "\n" + "\n".join(lines) if lines else " none"
        ways = f" ({inst.ways}-way buffered)" if inst.ways > 1 else ""
        raise SramOverflowError(
            f"SRAM overflow: allocating {charged:,} B for {arr.name}{format_region(region)}{ways} in scope "
            f"{'/'.join(inst.path)} would make the live footprint {self._live_bytes + charged:,} B > capacity "
            f"{self._sram_limit:,} B ({format_bytes(self._sram_limit)}). Live buffers ({self._live_bytes:,} B):"
            f"{listing}\n"
            f"Use smaller tiles, free buffers earlier (tighter scopes), or the reuse flag.",
            self._sram_limit, charged, live)

    def _store(self, buf: Buffer) -> None:
        arr = buf.tensor
        if arr.scratch:  # on-chip only: dropping it at scope exit is the point
            buf.dirty = False
            return
        region = buf.region
        for other in arr.live.overlapping(region):
            if other is not buf:
                if other.dirty:
                    raise CoherenceError(
                        f"two live modified buffers of {arr.name} overlap: {format_region(region)} (buffer "
                        f"{buf.id}) and {format_region(other.region)} (buffer {other.id}); storing one would "
                        f"overwrite the other's results. Give each output element one live buffer at a time.")
                other.stale = True
        nbytes = region_elements(region) * self._word_bytes
        slices = region_slices(region)
        stored = arr.stored
        if stored is None:
            stored = arr.stored = StoredElements(arr.shape)
        if stored.dense is not None:  # inlined `stored.add` for the common small tensor: stores are hot
            stored.dense[slices] = True
        else:
            stored.add(region)
        arr.stored_any = True
        if buf.data is not None:
            arr.data[slices] = buf.data
        buf.dirty = False
        counters = self.counters
        counters.stored_bytes += nbytes
        counters.stores += 1
        traffic = arr.traffic
        traffic.stored_bytes += nbytes
        traffic.stores += 1
        self._log.store(buf.id, arr.id, region, nbytes)

    def _fill(self, buf: Buffer, arr: TracedArray, region: Region, elements: int, reuse: bool) -> None:
        """Bring region into buf: a DMA load, or a zero-open for a writable region never stored."""
        # `stored.any_in` inlined for a dense mask (the common case: every miss of an output comes here);
        # tobytes + `in` is several times faster than ndarray.any() on the small regions of hot loops
        if arr.writable and (not arr.stored_any or not (
                b"\x01" in arr.stored.dense[region_slices(region)].tobytes() if arr.stored.dense is not None
                else arr.stored.any_in(region))):
            buf.loaded_from_ddr = False
            buf.load_bytes = 0
            buf.fresh_elements = elements
            buf.fresh_mask = None
            if self.numeric:
                buf.data = np.zeros(tuple(b - a for a, b in region), self.dtype)
            arr.traffic.opens += 1
            self.counters.opens += 1
            self._log.open(buf.id, arr.id, region, reuse)
            return
        nbytes = elements * self._word_bytes
        buf.loaded_from_ddr = True
        buf.load_bytes = nbytes
        buf.fresh_elements = 0
        buf.fresh_mask = None
        if self.numeric:
            # an input is never written, so a view is as good as a copy and saves the memcpy
            view = arr.data[region_slices(region)]
            buf.data = view.copy() if arr.writable else view
        counters = self.counters
        counters.loaded_bytes += nbytes
        counters.loads += 1
        traffic = arr.traffic
        traffic.loaded_bytes += nbytes
        traffic.loads += 1
        self._log.load(buf.id, arr.id, region, nbytes, reuse)

    # -- the hot path ----------------------------------------------------------------------------------------
    def _access_py(self, arr: TracedArray, key: tuple, reuse: bool) -> Tile:
        """Resolve `arr[key]` (reuse flag as given): a hit, a load into a new buffer, or a reuse load."""
        for k in key:
            if type(k) is slice and k.step is not None and k.step != 1:
                return self._access_strided(arr, key, reuse)
        region, elements = self._requested(arr, key, reuse)
        return self.access_in(arr, region, elements, reuse, None)

    def _access_strided(self, arr: TracedArray, key: tuple, reuse: bool) -> Tile:
        """`arr[key]` with a stepped slice: a strided DMA box (every step-th row, e.g. what a 1x1 stride-2 conv
        reads), whose buffer holds, and whose load moves, only the indices it names. A hit when a live buffer
        (dense, or strided with the same phase) holds them all; else a LOAD of the strided box into a new buffer."""
        region = normalize_region(arr.name, arr.shape, key, strided=True)
        if type(region_elements(region)) is not int:
            raise RegionError(f"{arr.name}: a strided box takes Python int bounds, got {key!r}")
        elements = region_elements(region)
        if all(len(axis) == 2 for axis in region):  # every stepped slice holds one index: a dense box, a hit
            held = None                                # also in a strided buffer holding its indices
            if not reuse and self._strided.get(arr.id) and not (arr.live.by_id and arr.live.containing(region)):
                held = next((b for b in self._strided[arr.id] if not b.freed and strided_within(region, b.region)),
                            None)
            if held is None:
                return self.access_in(arr, region, elements, reuse, None)
            arr.traffic.blog_loaded_elements += elements
            self.counters.blog_loaded_elements += elements
            arr.traffic.hits += 1
            self.counters.hits += 1
            self._log.hit(held.id, arr.id, region, reuse)
            return Tile(held, region)
        kept = self._kept_hit(arr, region) if self._kept else None
        if kept is not None:
            return kept
        if arr.writable:
            raise RegionError(f"{arr.name}{format_region(region)}: a strided box is loaded from a read-only input "
                              f"only (a written tensor's buffers are checked for coherence as dense boxes); load "
                              f"the dense box {format_region(tuple(axis[:2] for axis in region))}")
        if reuse:
            raise ReuseError(f"{arr.name}{format_region(region)}: the reuse flag is not supported with a strided "
                             f"box; drop it")
        traffic = arr.traffic
        counters = self.counters
        traffic.blog_loaded_elements += elements
        counters.blog_loaded_elements += elements
        box = tuple(axis[:2] for axis in region)
        held = arr.live.containing(box) if arr.live.by_id else None
        if held is None:
            bufs = self._strided.get(arr.id)
            if bufs:
                bufs[:] = [b for b in bufs if not b.freed]
                held = next((b for b in bufs if strided_within(region, b.region)), None)
        if held is not None:
            traffic.hits += 1
            counters.hits += 1
            self._log.hit(held.id, arr.id, region, reuse)
            return Tile(held, region)
        inst = self._stack[-1] if self._stack else self.current_scope(arr, region)
        nbytes = elements * self._word_bytes
        buf = self._allocate(arr, region, nbytes, inst, strided=True)
        buf.loaded_from_ddr = True
        buf.load_bytes = nbytes
        if self.numeric:
            buf.data = arr.data[tuple(slice(*axis) for axis in region)]  # (a view: an input is never written)
        counters.loaded_bytes += nbytes
        counters.loads += 1
        traffic.loaded_bytes += nbytes
        traffic.loads += 1
        self._log.load(buf.id, arr.id, region, nbytes, reuse)
        return Tile(buf, region)

    def _requested(self, arr: TracedArray, key: tuple, reuse: bool) -> tuple[Region, int]:
        """The region `key` names in arr and its elements; counted by the blog's counter unless reuse."""
        region = normalize_region(arr.name, arr.shape, key)
        elements = 1
        for a, b in region:
            elements *= b - a
        if type(elements) is not int:  # a hand-built Segment of floats or numpy ints passed the fast path
            region, elements = integral_region(arr.name, region)
        if not reuse:
            blog = requested_elements(arr.shape, key) if self.blog_quirks else elements
            arr.traffic.blog_loaded_elements += blog
            self.counters.blog_loaded_elements += blog
        return region, elements

    def _access_levels(self, arr: TracedArray, key: tuple, reuse: bool) -> Tile:
        """`access` on hardware with inner levels: resolved in the innermost scope whose level holds the tensor
        (`dsasim.traced.levels`, rule 2)."""
        region, elements = self._requested(arr, key, reuse)
        levels = self._levels
        idx = levels.target(self, arr, region)
        inst = self._stack[idx]
        buf = levels.hit_below(self, arr, region, inst.level, reuse)
        if buf is None and inst.level is not None:
            buf = levels.stage(self, arr, region, elements, reuse, idx)
        if buf is not None:
            return Tile(buf, region)
        levels.check_no_dirty_copy(arr, region)
        return self.access_in(arr, region, elements, reuse, inst)

    def access_in(self, arr: TracedArray, region: Region, elements: int, reuse: bool,
                  inst: ScopeInstance | None) -> Tile:
        """An SRAM access of a normalised region: a hit, else a load or zero-open into a new buffer of `inst`
        (None: the innermost scope), or a reuse load into the buffer `inst` holds."""
        traffic = arr.traffic
        counters = self.counters
        live = arr.live
        if live.by_id:
            buf = live.containing(region)
            if buf is not None:
                traffic.hits += 1
                counters.hits += 1
                self._log.hit(buf.id, arr.id, region, reuse)
                return Tile(buf, region)
            if arr.writable:
                holder = inst if inst is not None else self._stack[-1] if self._stack else None
                held = holder.held.get(arr.id) if reuse and holder is not None else None
                # (the buffer a reuse load replaces is stored first, so it is no hazard)
                refuse_modified_overlap(arr, region, live.overlapping(region), held, "must be read from DDR but",
                                        "stored")
        if inst is None:
            stack = self._stack
            if not stack:
                self.current_scope(arr, region)
            inst = stack[-1]
        nbytes = elements * self._word_bytes
        buf = inst.held.get(arr.id) if reuse else None
        if buf is None:
            buf = self._allocate(arr, region, nbytes, inst)
        else:
            if nbytes > buf.nbytes:
                raise ReuseError(
                    f"{arr.name}{format_region(region)} ({nbytes:,} B) does not fit the buffer it reuses "
                    f"(buffer {buf.id}, {buf.nbytes:,} B, allocated for {format_region(buf.region)}); access "
                    f"the largest tile first or drop the reuse flag")
            if buf.dirty:
                self._store(buf)
            buf.generation += 1
            buf.stale = False
            arr.live.move(buf, region)
        self._fill(buf, arr, region, elements, reuse)
        return Tile(buf, region)

    def slide(self, arr: TracedArray, key: tuple, capacity: tuple | None = None) -> Tile:
        """`arr.slide(key, capacity)`: see TracedArray.slide (rule 7 of the module docstring)."""
        region = normalize_region(arr.name, arr.shape, key)
        if type(region_elements(region)) is not int:
            region = integral_region(arr.name, region)[0]
        inst = self.current_scope(arr, region)
        kept = self._kept_hit(arr, region) if self._kept else None
        if kept is not None:
            return kept
        on_chip = arr.scratch  # an on-chip tensor's new rows open as zeros, for the schedule to compute
        if arr.writable and not on_chip:
            raise ReuseError(f"{arr.name}{format_region(region)}: only an input or an on-chip tensor slides; "
                             f"{arr.name} is written by the schedule to DDR, so rows kept on chip could differ "
                             f"from DDR. Index it instead")
        elements = region_elements(region)
        word = self._word_bytes
        if not on_chip:  # (the blog's counter: every DDR access not flagged reuse)
            self.counters.blog_loaded_elements += elements
            arr.traffic.blog_loaded_elements += elements
        buf = inst.held.get(arr.id)
        if buf is None:  # the first slide of this scope: a new buffer, sized for the capacity region
            size = region if capacity is None else normalize_region(arr.name, arr.shape, capacity)
            if region_elements(size) < elements:
                raise ReuseError(f"{arr.name}{format_region(region)} ({elements * word:,} B) does not fit the "
                                 f"capacity {format_region(size)} ({region_elements(size) * word:,} B) given for its "
                                 f"rotating buffer; give capacity= the largest region the buffer will hold")
            buf = self._allocate(arr, size, region_elements(size) * word, inst)
            arr.live.move(buf, region)
            self._fill(buf, arr, region, elements, False)
            return Tile(buf, region)
        if capacity is not None and \
                region_elements(normalize_region(arr.name, arr.shape, capacity)) * word != buf.nbytes:
            raise ReuseError(f"{arr.name}: capacity {format_region(normalize_region(arr.name, arr.shape, capacity))} "
                             f"differs from the {buf.nbytes:,} B of the rotating buffer {buf.id} its first slide in "
                             f"scope {'/'.join(inst.path)} allocated; a buffer keeps its size")
        held = buf.region
        axes = [i for i, (a, b) in enumerate(zip(region, held)) if a != b]
        if len(axes) > 1:
            raise ReuseError(f"{arr.name}{format_region(region)}: a slide moves the rotating buffer along one axis, "
                             f"but it holds {format_region(held)}; index the tensor for other moves")
        if elements * word > buf.nbytes:
            raise ReuseError(f"{arr.name}{format_region(region)} ({elements * word:,} B) does not fit its rotating "
                             f"buffer (buffer {buf.id}, {buf.nbytes:,} B); give the first slide capacity= the "
                             f"largest region")
        i = axes[0] if axes else 0
        (start, stop), (held_start, held_stop) = region[i], held[i]
        kept_start, kept_stop = max(start, held_start), min(stop, held_stop)  # the rows that stay on chip
        if kept_stop <= kept_start:
            kept_start = kept_stop = start
        nbytes = (elements - elements // (stop - start) * (kept_stop - kept_start)) * word
        if self.numeric and nbytes:  # kept rows from SRAM, the others from DDR: a wrong kept row is a wrong number
            def rows(a: int, b: int, source: np.ndarray, origin: int) -> np.ndarray:
                return source[(slice(None),) * i + (slice(a - origin, b - origin),)]

            # an on-chip tensor's new rows are zeros until the schedule computes them
            outside = (np.zeros(tuple(b - a for a, b in region), self.dtype) if on_chip
                       else arr.data[region_slices(region)])
            buf.data = np.concatenate([rows(start, kept_start, outside, start),
                                       rows(kept_start, kept_stop, buf.data, held_start),
                                       rows(kept_stop, stop, outside, start)], axis=i)
        elif self.numeric:  # every row it needs is held
            buf.data = buf.data[(slice(None),) * i + (slice(start - held_start, stop - held_start),)]
        if on_chip:
            fresh_rows(buf, region, i, kept_start, kept_stop)
        buf.generation += 1
        arr.live.move(buf, region)
        if on_chip:
            nbytes = 0  # nothing comes from DDR
        if nbytes:
            counters, traffic = self.counters, arr.traffic
            counters.loaded_bytes += nbytes
            counters.loads += 1
            traffic.loaded_bytes += nbytes
            traffic.loads += 1
            buf.load_bytes = nbytes
        self._log.slide(buf.id, arr.id, region, nbytes)
        return Tile(buf, region)

    def _kept_hit(self, arr: TracedArray, region: Region) -> Tile | None:
        """A hit on the buffer `Session.keep_on_chip` holds `arr` in (it holds the whole tensor), for a slide or a
        strided box too: every row is on chip already; None where `arr` is not kept."""
        if not arr.scratch or not arr.live.by_id:
            return None
        held = arr.live.containing(tuple(axis[:2] for axis in region))
        if held is None or held.id not in self._kept:
            return None
        arr.traffic.hits += 1
        self.counters.hits += 1
        self._log.hit(held.id, arr.id, region, False)
        return Tile(held, region)

    def mark_region_written(self, buf: Buffer, region: Region) -> None:
        """`mark_written` of region of buf (an inner level's write-back into its parent buffer)."""
        self.mark_written(Tile(buf, region))
        self.take_fresh(buf, region)  # (written back: no longer zeros)

    def take_fresh(self, buf: Buffer, region: Region) -> int:
        """Elements of `region` (inside buf's region) that are fresh in `buf` (`dsasim.dataflow`), which a write
        now makes not fresh."""
        if not buf.fresh_elements:
            return 0
        mask = buf.fresh_mask
        if mask is None:
            if region_elements(region) == buf.fresh_elements:  # (the whole fresh region, the common case)
                buf.fresh_elements = 0
                return region_elements(region)
            mask = buf.fresh_mask = np.ones(tuple(b - a for a, b in buf.region), bool)
        view = mask[tuple([slice(a - o, b - o) for (a, b), (o, _) in zip(region, buf.region)])]
        fresh = int(np.count_nonzero(view))
        if fresh:  # (a later write of the same elements finds none: nothing to clear)
            view[...] = False
        buf.fresh_elements -= fresh
        if not buf.fresh_elements:
            buf.fresh_mask = None
        return fresh

    def count_operands(self, product: Any, out: Tile, accumulate: bool) -> tuple[int, int, int, int, int]:
        """Add a compute's operand reads and writes (`dsasim.dataflow`) to the level each operand tile is in: its
        inputs' reads, its output's writes, and the output's reads, less its fresh elements (all of them for an
        overwrite); and the TensorCore's MACs or the vector lane operations (the reference of
        `_core.product_apply`'s counting). Returns what the COMPUTE event carries: (first_reads, second_reads,
        output_reads, output_writes, lane_ops)."""
        buf = out.buffer
        elements = region_elements(out.region)
        fresh = self.take_fresh(buf, out.region)
        if not accumulate:
            fresh = elements
        self._add_operand(buf, product.output_writes - fresh, product.output_writes)
        input_reads = [0, 0]
        for k, (tile, reads) in enumerate(zip(product.inputs, (product.first_reads, product.second_reads))):
            self._add_operand(tile.buffer, reads, 0)
            input_reads[k] = reads
        counters = self.counters
        lane_ops = 0
        if product.unit == "tensorcore":
            counters.tensorcore_macs += product.macs
        else:
            counters.vector_lane_ops += product.lane_ops
            lane_ops = product.lane_ops
        return (input_reads[0], input_reads[1], product.output_writes - fresh, product.output_writes, lane_ops)

    def _add_operand(self, buf: Buffer, read_elements: int, write_elements: int) -> None:
        """A compute's reads and writes of buf's tensor, in the level buf is in (elements)."""
        arr = buf.tensor
        if buf.level is None:
            arr.traffic.operand_read_elements += read_elements
            arr.traffic.operand_write_elements += write_elements
        else:
            self._levels.traffic[buf.level].add_operand(arr.name, read_elements, write_elements)

    def mark_written(self, tile: Tile) -> Buffer:
        """Record that a compute wrote `tile`: its buffer becomes modified (stored on free/reuse)."""
        buf = tile.check_live()
        arr = buf.tensor
        if not arr.writable:
            raise ReadOnlyError(f"cannot write into {arr.name}{format_region(tile.region)}: {arr.name} is an "
                                f"input; write into an output, intermediate or scratch tile")
        if not buf.dirty:
            buf.dirty = True
            if buf.loaded_from_ddr:
                buf.loaded_from_ddr = False  # count the read-modify-write once per load
                if buf.level is not None:
                    self._levels.count_rmw(buf)
                else:
                    self.counters.rmw_bytes += buf.load_bytes
                    arr.traffic.rmw_bytes += buf.load_bytes
        if self._levels is not None:
            self._levels.wrote(buf, tile.region)
        return buf


def fresh_rows(buf: Buffer, region: Region, axis: int, kept_start: int, kept_stop: int) -> None:
    """A slide of an on-chip rotating buffer to `region` along `axis`: its new rows are zeros (fresh), the kept rows
    [kept_start, kept_stop) keep their state."""
    old = buf.region
    if buf.fresh_elements and buf.fresh_mask is None:
        old_mask = np.ones(tuple(b - a for a, b in old), bool)
    elif buf.fresh_elements:
        old_mask = buf.fresh_mask
    else:
        old_mask = np.zeros(tuple(b - a for a, b in old), bool)
    mask = np.ones(tuple(b - a for a, b in region), bool)
    if kept_stop > kept_start:
        (start, _), (held_start, _) = region[axis], old[axis]
        lead = (slice(None),) * axis
        mask[lead + (slice(kept_start - start, kept_stop - start),)] = \
            old_mask[lead + (slice(kept_start - held_start, kept_stop - held_start),)]
    fresh = int(np.count_nonzero(mask))
    buf.fresh_elements = fresh
    buf.fresh_mask = None if fresh in (0, mask.size) else mask
