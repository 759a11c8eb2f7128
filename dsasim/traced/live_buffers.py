"""The live SRAM buffers of one tensor (`LiveBuffers`): what an access looks up to find a hit, and a store to find
the buffers it makes stale. Past a few buffers it keeps an index so that a lookup stays cheap with thousands."""

from __future__ import annotations

from dsasim.traced import _core
from dsasim.traced.trace import Region
from dsasim.util import ceil_div, region_contains, regions_overlap

__all__ = ["LiveBuffers"]

Buffer = _core.Buffer  # an SRAM buffer (a C class of the compiled core)

# A tensor with more live buffers than this is looked up through an index along its longest dimension instead
# of visiting every buffer: a schedule holding 10,000 tiles of one tensor would otherwise pay 10,000 region
# comparisons per access. Below it a scan is cheaper than keeping the index up to date.
_SCAN_MAX_BUFFERS = 16
_MAX_BUCKETS = 4096  # index blocks along the indexed dimension (each block spans ceil(extent / 4096) elements)
_WIDE_BLOCKS = 8  # a buffer spanning more blocks than this sits in one list that every lookup visits
_NO_BUFFERS: dict[int, Buffer] = {}


class LiveBuffers(_core.LiveFields):
    """The live buffers of one tensor by id (allocation order), and, past `scan_max` of them, an index of their
    extents along the tensor's longest dimension: lookups visit only buffers that can contain or overlap."""

    __slots__ = ()  # the fields, set in __init__, are C fields of _core.LiveFields: the compiled core reads them

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.by_id: dict[int, Buffer] = {}  # ids grow with allocation, so insertion order is id order
        self.dim = max(range(len(shape)), key=shape.__getitem__)
        self.block = ceil_div(shape[self.dim], _MAX_BUCKETS)
        self.buckets: dict[int, dict[int, Buffer]] | None = None  # None while the scan is cheaper
        self.wide: dict[int, Buffer] = {}
        self.scan_max = _SCAN_MAX_BUFFERS

    def _blocks(self, region: Region) -> range:
        start, stop = region[self.dim]
        return range(start // self.block, (stop - 1) // self.block + 1)

    def _index(self, buf: Buffer) -> None:
        blocks = self._blocks(buf.region)
        if len(blocks) > _WIDE_BLOCKS:
            self.wide[buf.id] = buf
            return
        buckets = self.buckets
        for k in blocks:
            bucket = buckets.get(k)
            if bucket is None:
                bucket = buckets[k] = {}
            bucket[buf.id] = buf

    def _unindex(self, buf: Buffer) -> None:
        blocks = self._blocks(buf.region)
        if len(blocks) > _WIDE_BLOCKS:
            del self.wide[buf.id]
            return
        buckets = self.buckets
        for k in blocks:
            bucket = buckets[k]
            del bucket[buf.id]
            if not bucket:
                del buckets[k]

    def add(self, buf: Buffer) -> None:
        """A new buffer (its id above every live one)."""
        self.by_id[buf.id] = buf
        if self.buckets is not None:
            self._index(buf)
        elif len(self.by_id) > self.scan_max:
            self.buckets = {}
            for live in self.by_id.values():
                self._index(live)

    def remove(self, buf: Buffer) -> None:
        """A freed buffer (a strided one, never added, is skipped: the Session keeps those apart)."""
        if self.by_id.pop(buf.id, None) is None:
            return
        if self.buckets is not None:
            if self.by_id:
                self._unindex(buf)
            else:
                self.buckets = None
                self.wide = {}

    def move(self, buf: Buffer, region: Region) -> None:
        """Set `buf.region` to `region` (a reuse load), keeping the index right."""
        if self.buckets is not None:
            self._unindex(buf)
            buf.region = region
            self._index(buf)
        else:
            buf.region = region

    def containing(self, region: Region) -> Buffer | None:
        """The lowest-id live buffer with current data (not stale) whose region contains `region`, or None."""
        buckets = self.buckets
        if buckets is None:
            for buf in self.by_id.values():
                if not buf.stale and region_contains(buf.region, region):
                    return buf
            return None
        best = None
        for group in (buckets.get(region[self.dim][0] // self.block, _NO_BUFFERS), self.wide):
            for buf in group.values():
                if (best is None or buf.id < best.id) and not buf.stale and region_contains(buf.region, region):
                    best = buf
        return best

    def overlapping(self, region: Region) -> list[Buffer]:
        """The live buffers whose regions overlap `region`, by id."""
        buckets = self.buckets
        blocks = self._blocks(region) if buckets is not None else ()
        if buckets is None or len(blocks) > len(buckets):
            return [buf for buf in self.by_id.values() if regions_overlap(buf.region, region)]
        found = {buf.id: buf for buf in self.wide.values() if regions_overlap(buf.region, region)}
        for k in blocks:
            for buf in buckets.get(k, _NO_BUFFERS).values():
                if regions_overlap(buf.region, region):
                    found[buf.id] = buf
        return [found[i] for i in sorted(found)]

    def __len__(self) -> int:
        return len(self.by_id)
