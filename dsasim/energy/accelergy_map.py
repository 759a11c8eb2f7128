"""Which Accelergy component prices which part of a dsasim accelerator: the map from dsasim's memory levels (DDR,
SRAM, inner levels) and compute units (TensorCore, vector unit) to the components of an ERT/ART table, and the
per-level and per-unit energies and areas it gives.

In a hardware TOML file (paths relative to the file):

    [accelergy]
    ert = "timeloop-model.ERT_summary.yaml"
    art = "timeloop-model.ART_summary.yaml"           # optional: without it, the default areas
    clock_hz = 1e9                                     # optional: the run's clock (its leak is per cycle of it)
    [accelergy.levels]                                 # every level of the hardware, DDR and SRAM included
    DDR = { component = "MainMemory", access_bytes = 8 }   # access_bytes: the component's width / 8
    SRAM = { component = "Buffer", access_bytes = 1 }
    [accelergy.units]
    tensorcore = { component = "MACC" }                # action defaults to "compute": pJ per MAC
    vector = { component = "alu", action = "add" }     # optional: pJ per lane operation

Accelergy prices an access of the component's width (a 64-bit DRAM read is 512 pJ), so a level's bytes cost
`read_pj_per_access / access_bytes` each: Timeloop charges a scalar the same way (its "Energy (per-scalar-access)"
is the vector access energy over the block size, e.g. 43.35 pJ / 8 = 5.42 pJ for the conv1d exercise's 64-bit
MainMemory). A level's leakage and area are the table's per-instance figures times the table's instances (the
SRAM as Accelergy's 16 `GlobalBuffer[1..16]` banks leaks 16 x). A unit's are per operator instance times the
hardware's own count (`tensorcore_in_channels x tensorcore_out_channels` MACs, `vector_lanes` lanes), since a
MAC table prices one MAC whatever the array size it was printed for.

Every problem is one ValueError line: a level or unit the hardware does not have, a level of the hardware left
unmapped (no silent zero energy), a component the table lacks, one without read and write (a level) or without
the action (a unit). `with_accelergy` sets the hardware's energy fields from the prices, so every energy report,
search and sweep uses them; `dsasim hardware FILE` then shows them as "given by the hardware description".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dataclasses
import math
from typing import Any

from dsasim.energy.accelergy import AccelergyComponent, AccelergyTables, read_accelergy
from dsasim.util import is_int

# `hardware` below is a dsasim.hardware.Accelerator, used by its fields only and not imported: dsasim.hardware reads a
# hardware file's [accelergy] section through this module, so importing it here would make an import cycle.
Accelerator = Any
DDR = "DDR"  # dsasim.hardware.DDR: the off-chip root level, above the SRAM

__all__ = ["UNITS", "UnitFields", "AccelergyBinding", "LevelEnergy", "UnitEnergy", "AccelergyEnergies", "accelergy_energies",
           "accelergy_from_toml", "with_accelergy"]

@dataclass(frozen=True)
class UnitFields:
    """How one dsasim compute unit takes Accelergy prices: which of the hardware's fields count its operator
    instances (multiplied together: the TensorCore's MAC lanes, the vector unit's lanes), and which fields receive
    its energy per operation and its area. A new unit is one entry of `UNITS`."""

    count_fields: tuple[str, ...]
    energy_field: str
    area_field: str


# The compute units a binding may name.
UNITS: dict[str, UnitFields] = {
    "tensorcore": UnitFields(("tensorcore_in_channels", "tensorcore_out_channels"), "mac_pj", "tensorcore_area_mm2"),
    "vector": UnitFields(("vector_lanes",), "vector_lane_op_pj", "vector_area_mm2"),
}
_MAX_ACCESS_BYTES = 1 << 20


def _unit_count(unit: str, hardware: Accelerator) -> int:
    """The hardware's operator instances of `unit`: MACs of the TensorCore, lanes of the vector unit."""
    return math.prod(getattr(hardware, name) for name in UNITS[unit].count_fields)


@dataclass(frozen=True)
class AccelergyBinding:
    """One line of the map: dsasim's `target` (a memory level's name, DDR included, or a unit from `UNITS`) is priced
    by the Accelergy `component`. A level gives `access_bytes` (bytes one action of the component moves: its width
    in bits / 8); a unit gives the `action` one operation is (default "compute")."""

    target: str
    component: str
    access_bytes: int | None = None
    action: str = "compute"

    def __post_init__(self) -> None:
        for name in ("target", "component", "action"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"Accelergy binding: {name} must be a non-empty string, got {value!r}")
        if self.access_bytes is not None and (not is_int(self.access_bytes) or
                                              not 1 <= self.access_bytes <= _MAX_ACCESS_BYTES):
            raise ValueError(f"Accelergy binding {self.target!r}: access_bytes must be an integer from 1 to "
                             f"{_MAX_ACCESS_BYTES:,} (the component's width in bits / 8), got {self.access_bytes!r}")

    @property
    def is_unit(self) -> bool:
        """True for a compute unit, False for a memory level."""
        return self.target in UNITS


@dataclass(frozen=True)
class LevelEnergy:
    """A memory level's prices from an Accelergy component: pJ per access of `access_bytes` bytes for a read, a
    write and an update (Timeloop's read-modify-write of partial sums; the write's energy where the table has no
    update), leakage in pJ per cycle of all the table's instances (None: the table gives no leak action) and area in
    mm^2 of all instances (None: no ART, or the ART lacks it)."""

    level: str
    component: str
    access_bytes: int
    read_pj_per_access: float
    write_pj_per_access: float
    update_pj_per_access: float
    leak_pj_per_cycle: float | None
    area_mm2: float | None
    instances: int

    @property
    def read_pj_per_byte(self) -> float:
        """pJ per byte read (a read access over the bytes it moves)."""
        return self.read_pj_per_access / self.access_bytes

    @property
    def write_pj_per_byte(self) -> float:
        """pJ per byte written."""
        return self.write_pj_per_access / self.access_bytes

    @property
    def update_pj_per_byte(self) -> float:
        """pJ per byte updated (read-modify-write)."""
        return self.update_pj_per_access / self.access_bytes


@dataclass(frozen=True)
class UnitEnergy:
    """A compute unit's prices from an Accelergy component: pJ per operation (`action` of one instance: one MAC of
    the TensorCore, one lane operation of the vector unit), leakage in pJ per cycle and area in mm^2 of the
    hardware's `operators` instances (None where the table has none)."""

    unit: str
    component: str
    action: str
    pj_per_op: float
    operators: int
    leak_pj_per_cycle: float | None
    area_mm2: float | None


@dataclass(frozen=True)
class AccelergyEnergies:
    """The prices an Accelergy table gives one accelerator: per memory level (`levels`, the hardware's order, DDR
    first) and per compute unit (`units`); `source` names the files for provenance."""

    levels: tuple[LevelEnergy, ...]
    units: tuple[UnitEnergy, ...]
    source: str

    def level(self, name: str) -> LevelEnergy:
        """The prices of the level called `name` (ValueError naming the levels there are)."""
        for lv in self.levels:
            if lv.level == name:
                return lv
        raise ValueError(f"no Accelergy prices for level {name!r}; levels are {[lv.level for lv in self.levels]}")

    def unit(self, name: str) -> UnitEnergy | None:
        """The prices of compute unit `name`, None when the map gives it none (the vector unit may go unpriced)."""
        if name not in UNITS:
            raise ValueError(f"unknown compute unit {name!r}; units are {list(UNITS)}")
        return next((u for u in self.units if u.unit == name), None)


def _level_energy(tables: AccelergyTables, binding: AccelergyBinding, part: AccelergyComponent) -> LevelEnergy:
    """A level's prices from its component; ValueError when the component cannot be a memory (no read/write)."""
    missing = [a for a in ("read", "write") if not part.has(a)]
    if missing:
        raise ValueError(f"Accelergy map: level {binding.target!r} -> component {part.name!r} of {tables.ert_path} "
                         f"has no {missing} action(s) (it has {list(part.actions)}); map the level to a storage "
                         f"component")
    if binding.access_bytes is None:
        raise ValueError(f"Accelergy map: level {binding.target!r} needs access_bytes (the bytes one access of "
                         f"{part.short_name!r} moves: its width in bits / 8)")
    leak = part.leak_pj_per_cycle
    write = part.energy_pj("write")
    return LevelEnergy(binding.target, part.name, binding.access_bytes, part.energy_pj("read"), write,
                       part.energy_pj("update") if part.has("update") else write,
                       None if leak is None else leak * part.instances, part.area_mm2, part.instances)


def _unit_energy(tables: AccelergyTables, binding: AccelergyBinding, part: AccelergyComponent,
                 hardware: Accelerator) -> UnitEnergy:
    """A unit's prices from its component, scaled to the hardware's operator count."""
    if binding.access_bytes is not None:
        raise ValueError(f"Accelergy map: unit {binding.target!r} takes no access_bytes (a unit is priced per "
                         f"operation); give action instead")
    if not part.has(binding.action):
        raise ValueError(f"Accelergy map: unit {binding.target!r} -> component {part.name!r} of {tables.ert_path} "
                         f"has no action {binding.action!r} (it has {list(part.actions)})")
    operators = _unit_count(binding.target, hardware)
    leak = part.leak_pj_per_cycle
    area = part.area_um2_per_instance
    return UnitEnergy(binding.target, part.name, binding.action, part.energy_pj(binding.action), operators,
                      None if leak is None else leak * operators, None if area is None else area * operators / 1e6)


def accelergy_energies(tables: AccelergyTables, bindings: tuple[AccelergyBinding, ...],
                       hardware: Accelerator) -> AccelergyEnergies:
    """Per-level and per-unit energies (pJ) and areas (mm^2) of `hardware` from an Accelergy table through the map
    `bindings`; every level of the hardware must be mapped and the TensorCore too (one ValueError line otherwise)."""
    if not isinstance(tables, AccelergyTables):
        raise ValueError(f"accelergy_energies: tables must be AccelergyTables (read_accelergy), got {tables!r}")
    if not isinstance(bindings, tuple) or not all(isinstance(b, AccelergyBinding) for b in bindings):
        raise ValueError(f"accelergy_energies: bindings must be a tuple of AccelergyBinding, got {bindings!r}")
    level_names = (DDR, *(lv.name for lv in hardware.levels))
    targets = [b.target for b in bindings]
    repeated = sorted({t for t in targets if targets.count(t) > 1})
    if repeated:
        raise ValueError(f"Accelergy map: {repeated} mapped twice; map each level and unit once")
    unknown = [t for t in targets if t not in level_names and t not in UNITS]
    if unknown:
        raise ValueError(f"Accelergy map: {unknown} is not a level or unit of hardware {hardware.name!r}; its levels "
                         f"are {list(level_names)} and its units {list(UNITS)}")
    unmapped = [name for name in level_names if name not in targets]
    if unmapped:
        raise ValueError(f"Accelergy map: level(s) {unmapped} of hardware {hardware.name!r} have no component, so "
                         f"no energies; map each to the component that prices it")
    if "tensorcore" not in targets:
        raise ValueError("Accelergy map: the tensorcore has no component, so no energy per MAC; map it (e.g. to "
                         "the table's intmac)")
    by_target = {b.target: b for b in bindings}
    levels = tuple(_level_energy(tables, by_target[name], tables.component(by_target[name].component))
                   for name in level_names)
    units = tuple(_unit_energy(tables, by_target[name], tables.component(by_target[name].component), hardware)
                  for name in UNITS if name in by_target)
    source = tables.ert_path if tables.art_path is None else f"{tables.ert_path} + {tables.art_path}"
    return AccelergyEnergies(levels, units, source)


def _check_keys(who: str, table: dict, keys: tuple[str, ...], required: str, required_hint: str) -> None:
    """ValueError (one line, `who` first) for a TOML table with a key outside `keys` or without `required`."""
    extra = sorted(set(table) - set(keys))
    if extra or required not in table:
        why = f"unknown key(s) {extra}" if extra else f"missing {required!r}{required_hint}"
        raise ValueError(f"{who}: {why}; valid keys are {list(keys)}")


def _bindings_from_toml(where: str, kind: str, table: object) -> list[AccelergyBinding]:
    """`[accelergy.levels]` or `[accelergy.units]` entries as bindings; ValueError naming the entry."""
    if not isinstance(table, dict):
        raise ValueError(f"{where}: accelergy.{kind} must be a table of NAME = {{ component = ... }}, got {table!r}")
    keys = ("component", "access_bytes") if kind == "levels" else ("component", "action")
    bindings = []
    for target, entry in table.items():
        if isinstance(entry, str):  # `SRAM = "Buffer"`: a unit needs no more; a level is told it needs access_bytes
            entry = {"component": entry}
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: accelergy.{kind}.{target} must be a table with {list(keys)}, got {entry!r}")
        _check_keys(f"{where}: accelergy.{kind}.{target}", entry, keys, "component", "")
        try:
            bindings.append(AccelergyBinding(target, entry["component"], entry.get("access_bytes"),
                                             entry.get("action", "compute")))
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
    return bindings


def _leakage_mw(leak_pj_per_cycle: float | None, clock_hz: float) -> float | None:
    """Leakage power, mW, of `leak_pj_per_cycle` pJ every cycle of `clock_hz`: pJ x Hz x 1e-9."""
    return None if leak_pj_per_cycle is None else leak_pj_per_cycle * clock_hz * 1e-9


def with_accelergy(hardware: Accelerator, energies: AccelergyEnergies, clock_hz: float | None = None) -> Accelerator:
    """`hardware` with its energy and area fields set from an Accelergy table's prices: DDR's read and write energy
    per bit, each on-chip level's access width, read and write energy per access, leakage and area, the TensorCore's
    energy per MAC lane and area, the vector unit's (if mapped). `clock_hz` is the clock of the Accelergy run, whose
    leak is per cycle of it (Timeloop's `global_cycle_seconds`; default the hardware's clock). A figure the table
    lacks (no leak action, no ART) keeps the hardware's default, whose source `dsasim hardware` prints. DDR is
    off-chip in dsasim, so a leak or area the table gives the component mapped to DDR is not charged (the conv1d
    exercises' MainMemory is a CACTI SRAM that leaks 0.007972 pJ per cycle: Timeloop adds it, dsasim does not)."""
    clock = hardware.clock_hz if clock_hz is None else clock_hz
    if isinstance(clock, bool) or not isinstance(clock, (int, float)) or not math.isfinite(clock) or clock <= 0:
        raise ValueError(f"Accelergy clock_hz must be a positive number (the clock its leak is per cycle of), "
                         f"got {clock_hz!r}")
    ddr, sram = energies.level(DDR), energies.level("SRAM")
    fields: dict[str, Any] = {
        "dram_pj_per_bit": ddr.read_pj_per_byte / 8, "dram_write_pj_per_bit": ddr.write_pj_per_byte / 8,
        "sram_access_bytes": sram.access_bytes, "sram_read_pj": sram.read_pj_per_access,
        "sram_write_pj": sram.write_pj_per_access}
    if sram.leak_pj_per_cycle is not None:
        fields["sram_leakage_mw"] = _leakage_mw(sram.leak_pj_per_cycle, clock)
    if sram.area_mm2 is not None:
        fields["sram_area_mm2"] = sram.area_mm2
    inner = []
    for level in hardware.inner_levels:
        priced = energies.level(level.name)
        changes: dict[str, Any] = {"access_bytes": priced.access_bytes, "read_pj": priced.read_pj_per_access,
                                   "write_pj": priced.write_pj_per_access}
        if priced.leak_pj_per_cycle is not None:
            changes["leakage_mw"] = _leakage_mw(priced.leak_pj_per_cycle, clock)
        if priced.area_mm2 is not None:
            changes["area_mm2"] = priced.area_mm2
        inner.append(dataclasses.replace(level, **changes))
    fields["inner_levels"] = tuple(inner)
    for unit, unit_fields in UNITS.items():
        priced_unit = energies.unit(unit)
        if priced_unit is None:
            continue
        fields[unit_fields.energy_field] = priced_unit.pj_per_op
        if priced_unit.area_mm2 is not None:
            fields[unit_fields.area_field] = priced_unit.area_mm2
    return dataclasses.replace(hardware, **fields)


SECTION_KEYS = ("ert", "art", "clock_hz", "levels", "units")


def accelergy_from_toml(hardware_path: str | Path, section: object, hardware: Accelerator) -> Accelerator:
    """`hardware` priced by the `[accelergy]` section of hardware file `hardware_path`: its tables (paths relative
    to the file), the clock of their run (`clock_hz`, default the hardware's) and its map (ValueError, one line
    naming the file, for any problem)."""
    where = f"hardware file {hardware_path}"
    if not isinstance(section, dict):
        raise ValueError(f"{where}: accelergy must be a table with {list(SECTION_KEYS)}; got {section!r}")
    _check_keys(f"{where}: accelergy", section, SECTION_KEYS, "ert", " (the ERT_summary.yaml path)")
    for key in ("ert", "art"):
        if key in section and (not isinstance(section[key], str) or not section[key].strip()):
            raise ValueError(f"{where}: accelergy.{key} must be a file path in quotes, got {section[key]!r}")
    base = Path(hardware_path).parent
    art = section.get("art")
    tables = read_accelergy(base / section["ert"], None if art is None else base / art)
    levels = _bindings_from_toml(where, "levels", section.get("levels", {}))
    units = _bindings_from_toml(where, "units", section.get("units", {}))
    misplaced = [b.target for b in levels if b.is_unit] + [b.target for b in units if not b.is_unit]
    if misplaced:
        raise ValueError(f"{where}: {misplaced} listed under the wrong table: levels go in accelergy.levels, "
                         f"units ({list(UNITS)}) in accelergy.units")
    try:
        return with_accelergy(hardware, accelergy_energies(tables, (*levels, *units), hardware),
                              section.get("clock_hz"))
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
