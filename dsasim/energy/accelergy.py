"""Accelergy's energy and area tables, read: the `ERT_summary` and `ART_summary` YAML files a Timeloop or Accelergy
run prints, so a Timeloop user's numbers drop into dsasim unchanged.

The format (Accelergy versions 0.3 and 0.4, as printed in Accelergy-Project/timeloop-accelergy-exercises):

* ERT summary: `ERT_summary: {version, table_summary: [{name, actions: [{name, energy}], ...}]}`; an action gives
  `energy`, or (0.3, actions with arguments) `average_energy` with `max_energy`/`min_energy`, of which dsasim takes
  the average. Energies are pJ per action of one instance: a storage `read`/`write`/`update` moves one access of the
  component's width (a 64-bit SRAM read is one action), a `compute` is one operation (one MAC of an `intmac`), and
  `leak` is the energy one instance leaks per cycle (Timeloop's "Per-instance-cycle leakage").
* ART summary: `ART_summary: {version, table_summary: [{name, area}]}`, area in um^2 per instance (Timeloop's
  stats multiply it by the instances: 16 MACCs of 332.25 um^2 print "Area (total) 5316.00 um^2").
* A component's name is its path with instance ranges, e.g. `System_top_level.PEWeightBuffer[1..64]` (0.4, 1-based)
  or `eyeriss_like.PE[0..167].mac` (0.3, 0-based): instances = the product of `hi - lo + 1` over the ranges.

Every problem with a file (missing, not YAML, wrong shape, a negative or non-finite number, an unknown version, an
ERT and ART that disagree) is one ValueError line naming the file and the entry.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from dsasim.util import is_int
from dsasim.user_files import parse_yaml, read_text

__all__ = ["ACCELERGY_VERSIONS", "AccelergyComponent", "AccelergyTables", "read_accelergy", "read_ert", "read_art",
           "instances_of", "short_name"]

# The summary versions whose layout this reader knows (Accelergy 0.3 prints `version: 0.3`, 0.4 `version: '0.4'`).
ACCELERGY_VERSIONS: tuple[str, ...] = ("0.3", "0.4")
LEAK_ACTION = "leak"
_RANGE = re.compile(r"\[(\d+)\.\.(\d+)\]")
_MAX_INSTANCES = 1 << 40  # more instances than any chip has: a typo, and it keeps totals exact


def instances_of(name: str) -> int:
    """The instance count a component name states: the product of `hi - lo + 1` over its `[lo..hi]` ranges (1 with
    none); ValueError for a range that runs backwards."""
    count = 1
    for lo, hi in _RANGE.findall(name):
        if int(hi) < int(lo):
            raise ValueError(f"instance range [{lo}..{hi}] runs backwards")
        count *= int(hi) - int(lo) + 1
    if count > _MAX_INSTANCES:
        raise ValueError(f"{count} instances is more than {_MAX_INSTANCES:,}")
    return count


def short_name(name: str) -> str:
    """The component's own name: the last element of its path, instance ranges removed (`System.PE[1..4].mac` ->
    `mac`)."""
    return _RANGE.sub("", name).rsplit(".", 1)[-1]


def _plain_name(name: str) -> str:
    """The path without instance ranges (`System.PE[1..4].mac` -> `System.PE.mac`)."""
    return _RANGE.sub("", name)


@dataclass(frozen=True)
class AccelergyComponent:
    """One component of an Accelergy table: its printed name (path with instance ranges), its instance count, its
    actions' energies in pJ per action of one instance (`action_energy_pj`, name -> pJ, in the file's order), and
    its area in um^2 per instance (None where no ART was read or the ART does not list it)."""

    name: str
    instances: int
    action_energy_pj: tuple[tuple[str, float], ...]
    area_um2_per_instance: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"AccelergyComponent: name must be a non-empty string, got {self.name!r}")
        who = f"Accelergy component {self.name!r}"
        if not is_int(self.instances) or not 1 <= self.instances <= _MAX_INSTANCES:
            raise ValueError(f"{who}: instances must be an integer from 1 to {_MAX_INSTANCES:,}, "
                             f"got {self.instances!r}")
        if not isinstance(self.action_energy_pj, tuple):
            raise ValueError(f"{who}: action_energy_pj must be a tuple of (action, pJ) pairs, "
                             f"got {self.action_energy_pj!r}")
        seen: set[str] = set()
        for pair in self.action_energy_pj:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str) and pair[0]):
                raise ValueError(f"{who}: action_energy_pj must hold (action name, pJ) pairs, got {pair!r}")
            action, energy = pair
            if action in seen:
                raise ValueError(f"{who}: action {action!r} is listed twice")
            seen.add(action)
            _check_number(f"{who}: action {action!r} energy (pJ)", energy)
        if self.area_um2_per_instance is not None:
            _check_number(f"{who}: area (um^2)", self.area_um2_per_instance)

    @property
    def short_name(self) -> str:
        """The component's own name, without its path and instance ranges."""
        return short_name(self.name)

    @property
    def actions(self) -> tuple[str, ...]:
        """The action names the table gives, in its order."""
        return tuple(a for a, _ in self.action_energy_pj)

    def has(self, action: str) -> bool:
        """True when the table gives an energy for `action`."""
        return action in self.actions

    def energy_pj(self, action: str) -> float:
        """pJ per `action` of one instance (ValueError naming the actions there are)."""
        for name, energy in self.action_energy_pj:
            if name == action:
                return energy
        raise ValueError(f"Accelergy component {self.name!r} has no action {action!r}; its actions are "
                         f"{list(self.actions)}")

    @property
    def leak_pj_per_cycle(self) -> float | None:
        """pJ one instance leaks per cycle (the `leak` action), None where the table gives none (Accelergy 0.3
        prints `idle` instead, the energy of an idle cycle, which is not the same thing)."""
        return self.energy_pj(LEAK_ACTION) if self.has(LEAK_ACTION) else None

    @property
    def area_mm2(self) -> float | None:
        """Area of all instances in mm^2 (um^2 per instance x instances / 1e6); None without an area."""
        if self.area_um2_per_instance is None:
            return None
        return self.area_um2_per_instance * self.instances / 1e6


@dataclass(frozen=True)
class AccelergyTables:
    """An ERT summary and, optionally, an ART summary, read and joined per component: `components` in the ERT's
    order; `ert_path`/`art_path` say where they came from (for messages and provenance)."""

    components: tuple[AccelergyComponent, ...]
    ert_path: str
    art_path: str | None = None
    version: str = "0.4"

    def __post_init__(self) -> None:
        if not isinstance(self.components, tuple) or not self.components or \
                not all(isinstance(c, AccelergyComponent) for c in self.components):
            raise ValueError(f"AccelergyTables {self.ert_path}: components must be a non-empty tuple of "
                             f"AccelergyComponent, got {self.components!r}")
        names = [c.name for c in self.components]
        if len(set(names)) != len(names):
            raise ValueError(f"AccelergyTables {self.ert_path}: a component name repeats in {names}")
        if self.version not in ACCELERGY_VERSIONS:
            raise ValueError(f"AccelergyTables {self.ert_path}: version must be one of {list(ACCELERGY_VERSIONS)}, "
                             f"got {self.version!r}")

    @property
    def names(self) -> tuple[str, ...]:
        """The components' printed names."""
        return tuple(c.name for c in self.components)

    def component(self, name: str) -> AccelergyComponent:
        """The component called `name`: its printed name (`System.GlobalBuffer[1..1]`), its path without ranges
        (`System.GlobalBuffer`) or its own name (`GlobalBuffer`) when only one component has it; ValueError naming
        the components there are otherwise."""
        for how in (lambda c: c.name, lambda c: _plain_name(c.name), lambda c: c.short_name):
            hits = [c for c in self.components if how(c) == name]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise ValueError(f"Accelergy table {self.ert_path}: {name!r} names {len(hits)} components "
                                 f"({[c.name for c in hits]}); give the full name")
        raise ValueError(f"Accelergy table {self.ert_path}: no component {name!r}; its components are "
                         f"{[c.short_name for c in self.components]}")


def _check_number(what: str, value: object) -> float:
    """`value` as a float if it is a finite number >= 0 (not a bool), else ValueError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


def _load_yaml(path: Path, kind: str) -> tuple[str, list]:
    """The `table_summary` list and the version of an ERT/ART summary file (`kind` "ERT" or "ART"); ValueError
    naming the file for a missing file, one that is not YAML, or one of the wrong shape or version."""
    what = f"Accelergy {kind} file"
    text = read_text(path, what, missing_hint=f"give the path of the {kind}_summary.yaml a Timeloop or Accelergy run "
                                              f"printed")
    document = parse_yaml(text, f"{what} {path}")
    key = f"{kind}_summary"
    if not isinstance(document, dict) or key not in document:
        found = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"Accelergy {kind} file {path}: no top-level {key!r} (found {found}); is it an "
                         f"{kind}_summary.yaml?")
    summary = document[key]
    if not isinstance(summary, dict):
        raise ValueError(f"Accelergy {kind} file {path}: {key} must be a mapping with version and table_summary")
    version = summary.get("version")
    version_text = f"{version:.1f}" if isinstance(version, float) else str(version)
    if version_text not in ACCELERGY_VERSIONS:
        raise ValueError(f"Accelergy {kind} file {path}: unknown version {version!r}; dsasim reads versions "
                         f"{list(ACCELERGY_VERSIONS)}")
    table = summary.get("table_summary")
    if not isinstance(table, list) or not table:
        raise ValueError(f"Accelergy {kind} file {path}: table_summary must be a non-empty list of components")
    for i, entry in enumerate(table):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            raise ValueError(f"Accelergy {kind} file {path}: entry #{i + 1} must be a mapping with a name, "
                             f"got {entry!r}")
    names = [e["name"] for e in table]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"Accelergy {kind} file {path}: component(s) {repeated} listed twice")
    return version_text, table


def _action_energy(path: Path, component: str, action: object) -> tuple[str, float]:
    """One ERT action as (name, pJ): its `energy`, or its `average_energy` (0.3's actions with arguments)."""
    where = f"Accelergy ERT file {path}: component {component!r}"
    if not isinstance(action, dict) or not isinstance(action.get("name"), str) or not action["name"]:
        raise ValueError(f"{where}: an action must be a mapping with a name and an energy, got {action!r}")
    name = action["name"]
    key = "energy" if "energy" in action else "average_energy" if "average_energy" in action else None
    if key is None:
        raise ValueError(f"{where}: action {name!r} has no energy (nor average_energy)")
    value = _check_number(f"{where}: action {name!r} {key} (pJ)", action[key])
    for bound in ("min_energy", "max_energy"):
        if bound in action:
            _check_number(f"{where}: action {name!r} {bound} (pJ)", action[bound])
    if "min_energy" in action and "max_energy" in action and not \
            action["min_energy"] <= value <= action["max_energy"]:
        raise ValueError(f"{where}: action {name!r} {key} {value} lies outside [min_energy, max_energy] = "
                         f"[{action['min_energy']}, {action['max_energy']}]")
    return name, value


def read_ert(path: str | Path) -> tuple[str, tuple[tuple[str, int, tuple[tuple[str, float], ...]], ...]]:
    """An ERT summary's version and, per component, (name, instances, ((action, pJ per action), ...))."""
    path = Path(path)
    version, table = _load_yaml(path, "ERT")
    rows = []
    for entry in table:
        name = entry["name"]
        actions = entry.get("actions")
        if not isinstance(actions, list) or not actions:
            raise ValueError(f"Accelergy ERT file {path}: component {name!r}: actions must be a non-empty list")
        energies = tuple(_action_energy(path, name, a) for a in actions)
        if len({a for a, _ in energies}) != len(energies):
            raise ValueError(f"Accelergy ERT file {path}: component {name!r}: an action is listed twice "
                             f"({[a for a, _ in energies]})")
        try:
            instances = instances_of(name)
        except ValueError as err:
            raise ValueError(f"Accelergy ERT file {path}: component {name!r}: {err}") from None
        rows.append((name, instances, energies))
    return version, tuple(rows)


def read_art(path: str | Path) -> tuple[str, tuple[tuple[str, float], ...]]:
    """An ART summary's version and, per component, (name, um^2 per instance)."""
    path = Path(path)
    version, table = _load_yaml(path, "ART")
    rows = []
    for entry in table:
        if "area" not in entry:
            raise ValueError(f"Accelergy ART file {path}: component {entry['name']!r} has no area")
        rows.append((entry["name"], _check_number(f"Accelergy ART file {path}: component {entry['name']!r} "
                                                  f"area (um^2)", entry["area"])))
    return version, tuple(rows)


def read_accelergy(ert_path: str | Path, art_path: str | Path | None = None) -> AccelergyTables:
    """Read an ERT summary and, if given, the ART summary of the same run into one validated table (ValueError, one
    line naming the file and the entry, for any problem; a component of the ERT the ART lacks has no area, which
    is fine for DRAM, but the ART naming a component the ERT lacks means they belong to different runs)."""
    version, rows = read_ert(ert_path)
    areas: dict[str, float] = {}
    if art_path is not None:
        art_version, art_rows = read_art(art_path)
        if art_version != version:
            raise ValueError(f"Accelergy ART file {art_path}: version {art_version} differs from the ERT's "
                             f"({version}, {ert_path}); give the two files of one run")
        areas = dict(art_rows)
    ert_names = [name for name, _, _ in rows]
    # The ART lists area-only parts (a network-on-chip `inter_PE_spatial` with no actions) the ERT leaves out;
    # those are harmless. A component with actions in the ERT but an ART of another design is not.
    if areas and not any(name in areas for name in ert_names):
        raise ValueError(f"Accelergy ART file {art_path}: none of its components ({sorted(areas)}) is in the ERT "
                         f"{ert_path}; give the two files of one run")
    components = tuple(AccelergyComponent(name, instances, energies, areas.get(name))
                       for name, instances, energies in rows)
    return AccelergyTables(components, str(ert_path), None if art_path is None else str(art_path), version)
