"""The accelerator's hardware description: a frozen, validated dataclass, presets as data, TOML loading.

Memory levels: DDR, then the global SRAM (`sram_bytes`, fed at `dram_bytes_per_cycle`), then optional
`inner_levels` (`MemoryLevel`): buffers next to the TensorCore, each fed from its parent level. The TensorCore
reads an operand from the innermost level that holds the operand's role (input, weight, output); with no inner
levels it reads the SRAM, as the blog's machine does. The tree is one structure: `Accelerator.levels` holds the SRAM
(a validated `MemoryLevel` of kind GLOBAL_LEVEL, built from the fields above) and the inner levels, each naming
its parent (the SRAM's is DDR, the root); `children` and `path` walk it down from DDR with no special case.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from dsasim.dataflow import DEFAULT_DATAFLOW, check_dataflow
from dsasim.energy.accelergy_map import accelergy_from_toml
from dsasim.energy.sources import DRAM_TYPES
from dsasim.util import is_int
from dsasim.user_files import read_text

KIB = 1024
MIB = 1024 * 1024

# The operand roles a memory level may hold: a conv's image, weight and output; a matmul's a, b and c.
ROLES: tuple[str, ...] = ("input", "weight", "output")
SRAM_LEVEL = "SRAM"  # the global level's name; DDR is above it
DDR = "DDR"  # the off-chip root of the memory tree: the SRAM's parent (unbounded, so not a MemoryLevel)
_RESERVED_LEVEL_NAMES = {DDR, SRAM_LEVEL}
# What a MemoryLevel is: the global SRAM (exactly one, built by `Accelerator.sram_level` from its fields) or a
# buffer below it (`inner_levels`, the default). Only the global kind may carry the reserved name SRAM.
GLOBAL_LEVEL, INNER_LEVEL = "global", "inner"
LEVEL_KINDS: tuple[str, ...] = (GLOBAL_LEVEL, INNER_LEVEL)
MAX_LEVEL_WAYS = 64  # as `dsasim simulate --ways`: more ways is a typo, not a design


@dataclass(frozen=True)
class MemoryLevel:
    """An on-chip memory level: its capacity, the bandwidth of its port to its parent level (bytes per cycle,
    loads and write-backs share it), a setup cost per transfer (cycles), which operand roles it holds (`ROLES`),
    and the most buffering ways a scope in it may use. `kind` INNER_LEVEL (the default): a buffer below the
    global SRAM; GLOBAL_LEVEL: the SRAM itself, fed from DDR (`Accelerator.sram_level` builds it from the
    accelerator's fields; a hardware description never lists it)."""

    name: str
    capacity_bytes: int
    bytes_per_cycle: float
    holds: tuple[str, ...] = ROLES
    parent: str = SRAM_LEVEL
    setup_cycles: int = 0
    max_ways: int = 2
    # Energy and area (docs/model/energy.md): the port's width per access, and per-access read / write energy,
    # leakage and area; None takes the SRAM rule's figure at this capacity (dsasim/energy/sram_rule.py).
    access_bytes: int = 32
    read_pj: float | None = None
    write_pj: float | None = None
    leakage_mw: float | None = None
    area_mm2: float | None = None
    kind: str = dataclasses.field(default=INNER_LEVEL, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"MemoryLevel: name must be a non-empty string, got {self.name!r}")
        who = f"memory level {self.name!r}"
        if self.kind not in LEVEL_KINDS:
            raise ValueError(f"{who}: kind must be one of {list(LEVEL_KINDS)}, got {self.kind!r}")
        if self.kind == INNER_LEVEL and self.name in _RESERVED_LEVEL_NAMES:
            raise ValueError(f"{who}: the name is reserved for the level dsasim always has (DDR, and SRAM of "
                             f"sram_bytes); name the buffer after what it is, e.g. 'L1w'")
        if self.kind == GLOBAL_LEVEL and (self.name, self.parent) != (SRAM_LEVEL, DDR):
            raise ValueError(f"{who}: the global level is the one {SRAM_LEVEL!r}, fed from {DDR!r} (parent); got "
                             f"name {self.name!r}, parent {self.parent!r}; a buffer below it is kind {INNER_LEVEL!r}")
        if not is_int(self.capacity_bytes) or not 1 <= self.capacity_bytes <= 1 << 50:
            raise ValueError(f"{who}: capacity_bytes must be a positive integer, got {self.capacity_bytes!r}")
        bw = self.bytes_per_cycle
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not 1.0 / 1024 <= bw <= float(1 << 20):
            raise ValueError(f"{who}: bytes_per_cycle must be a positive number from {1 / 1024:g} to {1 << 20} "
                             f"(zero bandwidth would make every transfer into it infinite), got {bw!r}")
        if not is_int(self.setup_cycles) or not 0 <= self.setup_cycles <= 10 ** 9:
            raise ValueError(f"{who}: setup_cycles must be an integer >= 0, got {self.setup_cycles!r}")
        if not is_int(self.max_ways) or not 1 <= self.max_ways <= MAX_LEVEL_WAYS:
            raise ValueError(f"{who}: max_ways must be an integer from 1 to {MAX_LEVEL_WAYS}, got {self.max_ways!r}")
        if isinstance(self.holds, str) or not isinstance(self.holds, (tuple, list)):
            raise ValueError(f"{who}: holds must be a list of roles from {list(ROLES)}, got {self.holds!r}")
        holds = tuple(self.holds)
        unknown = [r for r in holds if r not in ROLES]
        if unknown or not holds or len(set(holds)) != len(holds):
            why = f"unknown role(s) {unknown}" if unknown else "it is empty" if not holds else "a role repeats"
            raise ValueError(f"{who}: holds must list distinct roles from {list(ROLES)} ({why}), got {list(holds)}")
        object.__setattr__(self, "holds", holds)
        if not isinstance(self.parent, str) or not self.parent:
            raise ValueError(f"{who}: parent must name a level above it ({SRAM_LEVEL!r} or an inner level), got "
                             f"{self.parent!r}")
        if not is_int(self.access_bytes) or not 1 <= self.access_bytes <= 1 << 16:
            raise ValueError(f"{who}: access_bytes (the port's width per access) must be an integer from 1 to "
                             f"{1 << 16}, got {self.access_bytes!r}")
        for name in ("read_pj", "write_pj", "leakage_mw", "area_mm2"):
            check_optional_figure(who, name, getattr(self, name))


def check_optional_figure(who: str, name: str, value: object) -> None:
    """ValueError unless `value` is None (the default rule's figure) or a finite number >= 0 (an energy, power or
    area given by the user; zero is allowed, e.g. an off-chip part with no area on the die)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError(f"{who}: {name} must be a finite number >= 0 (or left out for the default rule's figure), "
                         f"got {value!r}")


# Allowed ranges of the numeric fields (inclusive). The upper limits keep every byte and cycle count an exact
# integer far below 2**63 and catch unit mistakes (a clock in GHz written as Hz); they are far beyond real parts.
_INT_RANGES: dict[str, tuple[int, int]] = {
    "sram_bytes": (1, 1 << 50),  # 1 PiB
    "word_bytes": (1, 64),
    "tensorcore_in_channels": (1, 1 << 16),
    "tensorcore_out_channels": (1, 1 << 16),
    "dma_setup_cycles": (0, 10 ** 9),
    "dma_load_channels": (1, 1024),
    "dma_burst_bytes": (1, 1 << 20),
    "dma_run_cycles": (0, 10 ** 6),
    "vector_lanes": (1, 1 << 20),
    "technology_nm": (3, 250),
    "sram_access_bytes": (1, 1 << 16),
}
# Energy and area figures a description may give (None: the default, from the sources, `dsasim hardware --show`)
_OPTIONAL_FIGURES = ("dram_pj_per_bit", "dram_write_pj_per_bit", "sram_read_pj", "sram_write_pj", "sram_leakage_mw", "sram_area_mm2", "mac_pj",
                     "vector_lane_op_pj", "tensorcore_area_mm2", "vector_area_mm2")
_FLOAT_RANGES: dict[str, tuple[float, float]] = {
    "clock_hz": (1e3, 1e13),  # 1 kHz .. 10 THz
    "dram_bytes_per_cycle": (1.0 / 1024, float(1 << 20)),
}


@dataclass(frozen=True)
class Accelerator:
    """A DSA: one SRAM, a DDR port, DMA engines, a TensorCore and a vector unit.

    Traffic and SRAM capacity are counted in `word_bytes` per element, whatever numpy dtype the numeric check
    uses: a schedule over float32 data on a 1-byte-word accelerator moves 1 byte per element.
    """

    name: str
    sram_bytes: int
    word_bytes: int
    tensorcore_in_channels: int = 16
    tensorcore_out_channels: int = 24
    clock_hz: float = 1e9
    dram_bytes_per_cycle: float = 32.0
    # True: loads and stores share one DDR port of dram_bytes_per_cycle; False: each direction has its own.
    dram_shared_load_store: bool = True
    dma_setup_cycles: int = 64
    dma_load_channels: int = 1
    # A transfer moves each contiguous DDR run of its box (`dsasim.layout`) in whole bursts of dma_burst_bytes and
    # pays dma_run_cycles per run (a descriptor) besides dma_setup_cycles; 1 and 0 leave layout out of the time.
    dma_burst_bytes: int = 1
    dma_run_cycles: int = 0
    vector_lanes: int = 32
    # Levels below the SRAM, parents before children (see the module docstring); () is the blog's one level.
    inner_levels: tuple[MemoryLevel, ...] = ()
    # which operand elements a TensorCore step reads and writes (`dsasim.dataflow.DATAFLOWS`)
    tensorcore_dataflow: str = DEFAULT_DATAFLOW
    # Energy and area (docs/model/energy.md). Every figure left None takes its default, computed for this
    # hardware (node, word size, capacities) from published sources; `dsasim hardware NAME` prints each with its
    # source. The process node the defaults are scaled to:
    technology_nm: int = 45
    dram_type: str = "LPDDR4"  # DRAM energy per bit by type (dsasim.energy.sources.DRAM_TYPES)
    dram_pj_per_bit: float | None = None  # overrides dram_type's figure
    # a write's, where it differs from the read's (Accelergy and ZigZag tables give both); None: dram_pj_per_bit's
    dram_write_pj_per_bit: float | None = None
    sram_access_bytes: int = 32  # the SRAM port's width: bytes per read or write access
    sram_read_pj: float | None = None  # per access; None: the SRAM rule at sram_bytes (so a sweep rescales it)
    sram_write_pj: float | None = None
    sram_leakage_mw: float | None = None
    sram_area_mm2: float | None = None
    mac_pj: float | None = None  # one MAC lane per TensorCore step (padded MACs burn it too)
    vector_lane_op_pj: float | None = None  # one vector lane operation (one element)
    tensorcore_area_mm2: float | None = None
    vector_area_mm2: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Accelerator: name must be a non-empty string, got {self.name!r}")
        for field_name, (low, high) in _INT_RANGES.items():
            value = getattr(self, field_name)
            if not is_int(value) or not low <= value <= high:
                kind = "a positive integer" if low == 1 else f"an integer >= {low}"
                raise ValueError(f"Accelerator {self.name!r}: {field_name} must be {kind} (at most {high:,}), "
                                 f"got {value!r}")
        for field_name, (low, high) in _FLOAT_RANGES.items():
            value = getattr(self, field_name)
            # `not low <= value` also rejects NaN; inf fails the upper limit
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"Accelerator {self.name!r}: {field_name} must be a positive number from {low:g} "
                                 f"to {high:g} (zero bandwidth or clock would make every transfer infinite), "
                                 f"got {value!r}")
        if not isinstance(self.dram_shared_load_store, bool):
            raise ValueError(f"Accelerator {self.name!r}: dram_shared_load_store must be true or false, "
                             f"got {self.dram_shared_load_store!r}")
        for field_name in _OPTIONAL_FIGURES:
            check_optional_figure(f"Accelerator {self.name!r}", field_name, getattr(self, field_name))
        if not isinstance(self.dram_type, str) or self.dram_type not in DRAM_TYPES:
            raise ValueError(f"Accelerator {self.name!r}: unknown dram_type {self.dram_type!r}; known types are "
                             f"{', '.join(DRAM_TYPES)} (or give dram_pj_per_bit)")
        if self.word_bytes > self.sram_bytes:
            raise ValueError(f"Accelerator {self.name!r}: word_bytes ({self.word_bytes}) exceeds sram_bytes "
                             f"({self.sram_bytes}); not even one element fits")
        check_dataflow(self.tensorcore_dataflow, f"Accelerator {self.name!r}")
        self._check_levels()

    def _check_levels(self) -> None:
        """ValueError for an inner-level stack that cannot work: a level larger than its parent, one whose parent
        is unknown or comes later, a role its parent does not hold (it could never arrive), a role two sibling
        levels both hold (the TensorCore's source would be ambiguous), a level smaller than one word."""
        who = f"Accelerator {self.name!r}"
        levels = self.inner_levels
        if isinstance(levels, list):
            levels = tuple(levels)
            object.__setattr__(self, "inner_levels", levels)
        if not isinstance(levels, tuple) or not all(isinstance(lv, MemoryLevel) for lv in levels):
            raise ValueError(f"{who}: inner_levels must be a tuple of MemoryLevel, got {self.inner_levels!r}")
        above: dict[str, MemoryLevel] = {SRAM_LEVEL: self.sram_level}
        for lv in levels:
            if lv.name in above:
                raise ValueError(f"{who}: two memory levels are named {lv.name!r}; give each a distinct name")
            parent = above.get(lv.parent)
            if parent is None:
                raise ValueError(f"{who}: memory level {lv.name!r} has parent {lv.parent!r}, which is not "
                                 f"{SRAM_LEVEL!r} or a level listed before it ({list(above)})")
            if lv.capacity_bytes > parent.capacity_bytes:
                raise ValueError(f"{who}: memory level {lv.name!r} ({lv.capacity_bytes:,} bytes) is larger than "
                                 f"its parent {parent.name!r} ({parent.capacity_bytes:,} bytes); a level below "
                                 f"holds a subset of the one above, so it cannot be larger")
            if lv.capacity_bytes < self.word_bytes:
                raise ValueError(f"{who}: memory level {lv.name!r} ({lv.capacity_bytes} bytes) is smaller than "
                                 f"one word ({self.word_bytes} bytes)")
            stray = [r for r in lv.holds if r not in parent.holds]
            if stray:
                raise ValueError(f"{who}: memory level {lv.name!r} holds {stray}, but its parent {parent.name!r} "
                                 f"does not, so that data could never reach it; add the role to {parent.name!r} "
                                 f"or hang {lv.name!r} below a level that holds it")
            for sibling in levels:
                if sibling is lv or sibling.parent != lv.parent:
                    continue
                shared = [r for r in lv.holds if r in sibling.holds]
                if shared:
                    raise ValueError(f"{who}: memory levels {lv.name!r} and {sibling.name!r} both hang below "
                                     f"{lv.parent!r} and both hold {shared}; the TensorCore would not know which "
                                     f"one to read, so give each role to one of them")
            above[lv.name] = lv

    @functools.cached_property
    def sram_level(self) -> MemoryLevel:
        """The global SRAM as a validated level: capacity `sram_bytes`, fed from DDR at `dram_bytes_per_cycle` with
        `dma_setup_cycles` per transfer, holding every role; a scope in it may use up to MAX_LEVEL_WAYS ways."""
        return MemoryLevel(SRAM_LEVEL, self.sram_bytes, self.dram_bytes_per_cycle, holds=ROLES, parent=DDR,
                           setup_cycles=self.dma_setup_cycles, max_ways=MAX_LEVEL_WAYS,
                           access_bytes=self.sram_access_bytes, read_pj=self.sram_read_pj,
                           write_pj=self.sram_write_pj, leakage_mw=self.sram_leakage_mw,
                           area_mm2=self.sram_area_mm2, kind=GLOBAL_LEVEL)

    @functools.cached_property
    def levels(self) -> tuple[MemoryLevel, ...]:
        """The memory tree's on-chip levels, parents before children: the SRAM (its parent is DDR, the root), then
        `inner_levels`; each level's `parent` names the level above it. Index 0 is the SRAM."""
        return (self.sram_level, *self.inner_levels)

    def children(self, name: str) -> tuple[MemoryLevel, ...]:
        """The levels fed from the level called `name` (DDR: the SRAM), in `levels` order (ValueError: no such
        level)."""
        if name != DDR:
            self.level(name)
        return tuple(lv for lv in self.levels if lv.parent == name)

    def level(self, name: str) -> MemoryLevel:
        """The on-chip level called `name` (ValueError naming the levels there are)."""
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise ValueError(f"hardware {self.name!r} has no memory level {name!r}; its levels are "
                         f"{[lv.name for lv in self.levels]}")

    def path(self, role: str) -> tuple[MemoryLevel, ...]:
        """The levels an operand of `role` passes through, SRAM first, down to the one the TensorCore reads."""
        if role not in ROLES:
            raise ValueError(f"unknown operand role {role!r}; roles are {list(ROLES)}")
        chain: list[MemoryLevel] = []
        parent = DDR
        while True:  # down the tree from its root: at each level the one child that holds the role
            child = next((lv for lv in self.children(parent) if role in lv.holds), None)
            if child is None:
                return tuple(chain)
            chain.append(child)
            parent = child.name

    @property
    def sram_words(self) -> int:
        """SRAM capacity in elements (words)."""
        return self.sram_bytes // self.word_bytes


PRESETS: dict[str, Accelerator] = {
    "blog": Accelerator(
        name="blog",
        sram_bytes=1536 * KIB,
        word_bytes=1,
        tensorcore_in_channels=16,
        tensorcore_out_channels=24,
        clock_hz=1e9,
        dram_bytes_per_cycle=32.0,
        dram_shared_load_store=True,
        dma_setup_cycles=64,
        vector_lanes=32,
    ),
}
# The blog's machine with fp32 storage: the case where a conv's weights no longer fit on chip.
PRESETS["blog-fp32"] = dataclasses.replace(PRESETS["blog"], name="blog-fp32", word_bytes=4)
# The blog's machine with buffers next to the TensorCore (docs/model/levels.md: the sizes and bandwidths
# and why). Per step the 16x24 TensorCore reads 16 input bytes and, unless a weight block stays put, 384 weight
# bytes, and updates 24 accumulators.
PRESETS["blog-l1"] = dataclasses.replace(PRESETS["blog"], name="blog-l1", inner_levels=(
    MemoryLevel("L1w", capacity_bytes=64 * KIB, bytes_per_cycle=128.0, holds=("weight",), setup_cycles=4),
    MemoryLevel("L1i", capacity_bytes=32 * KIB, bytes_per_cycle=64.0, holds=("input",), setup_cycles=4),
    MemoryLevel("L1acc", capacity_bytes=16 * KIB, bytes_per_cycle=64.0, holds=("output",), setup_cycles=4),
))

_FIELDS = {f.name for f in dataclasses.fields(Accelerator)}


def from_toml(path: str | Path) -> Accelerator:
    """Load an Accelerator from a TOML file; `base = "PRESET"` starts from a preset, other keys override it.

    Every problem with the file (missing, a folder, unreadable, not UTF-8, not TOML, a wrong key or value) is a
    ValueError that names the file and, for a value, the key and what is allowed."""
    path = Path(path)
    text = read_text(path, "hardware file",
                     missing_hint=f"give a preset ({', '.join(PRESETS)}) or the path of a .toml file",
                     folder_hint="give the path of a .toml file", encoding_hint="save it as UTF-8 TOML")
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"hardware file {path}: not valid TOML: {err}") from None
    base_name = table.pop("base", None)
    accelergy = table.pop("accelergy", None)  # an [accelergy] section: energies and areas from Accelergy's tables
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise ValueError(f"hardware file {path}: unknown key(s) {unknown}; valid keys are 'base', 'accelergy' and "
                         f"{sorted(_FIELDS)}")
    if "inner_levels" in table:
        table["inner_levels"] = _levels_from_toml(path, table["inner_levels"])
    name = table.pop("name", path.stem)
    if not isinstance(name, str) or not name:
        raise ValueError(f"hardware file {path}: name must be a non-empty string, got {name!r}")
    try:
        if base_name is not None:
            if not isinstance(base_name, str):
                raise ValueError(f"base must be a preset name in quotes ({', '.join(PRESETS)}), got {base_name!r}")
            hardware = dataclasses.replace(preset(base_name), name=name, **table)
        else:
            missing = sorted({"sram_bytes", "word_bytes"} - set(table))
            if missing:
                raise ValueError(f"missing {missing}; give them or start from a preset with base = \"blog\"")
            hardware = Accelerator(name=name, **table)
    except ValueError as err:
        raise ValueError(f"hardware file {path}: {err}") from None
    # the section's errors already name the file
    return hardware if accelergy is None else accelergy_from_toml(path, accelergy, hardware)


# a hardware file lists only inner levels, so `kind` is not a key there (the SRAM comes from sram_bytes & co.)
_LEVEL_FIELDS = [f.name for f in dataclasses.fields(MemoryLevel) if f.name != "kind"]


def _levels_from_toml(path: Path, entries: object) -> tuple[MemoryLevel, ...]:
    """`[[inner_levels]]` tables as MemoryLevels; ValueError naming the file, the level and the key."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"hardware file {path}: inner_levels must be an array of tables ([[inner_levels]] "
                         f"sections with name, capacity_bytes, bytes_per_cycle, holds, ...), got {entries!r}")
    levels = []
    for i, entry in enumerate(entries):
        label = entry.get("name", f"#{i + 1}")
        unknown = sorted(set(entry) - set(_LEVEL_FIELDS))
        if unknown:
            raise ValueError(f"hardware file {path}: inner level {label!r}: unknown key(s) {unknown}; valid keys "
                             f"are {_LEVEL_FIELDS}")
        missing = [k for k in ("name", "capacity_bytes", "bytes_per_cycle") if k not in entry]
        if missing:
            raise ValueError(f"hardware file {path}: inner level {label!r}: missing {missing}")
        try:
            levels.append(MemoryLevel(**{**entry, "holds": tuple(entry["holds"]) if isinstance(
                entry.get("holds"), list) else entry.get("holds", ROLES)}))
        except ValueError as err:
            raise ValueError(f"hardware file {path}: {err}") from None
    return tuple(levels)


def preset(name: str) -> Accelerator:
    """Return the preset Accelerator called `name`."""
    if not isinstance(name, str):
        raise ValueError(f"a hardware preset is named by a string ({', '.join(PRESETS)}), got {name!r}")
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown hardware preset {name!r}; presets are {sorted(PRESETS)}, "
                         f"or pass a path to a .toml file") from None


def load_hardware(spec: str | Path) -> Accelerator:
    """Resolve a preset name or a TOML file path to an Accelerator."""
    if not isinstance(spec, (str, Path)):
        raise ValueError(f"hardware must be a preset name or a .toml path, got {spec!r}")
    if not str(spec).strip():
        raise ValueError(f"hardware is empty; give a preset ({', '.join(PRESETS)}) or the path of a .toml file")
    if str(spec) in PRESETS:
        return PRESETS[str(spec)]
    path = Path(spec)
    if path.suffix == ".toml" or path.exists():
        return from_toml(path)
    return preset(str(spec))
