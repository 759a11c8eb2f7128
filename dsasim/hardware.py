"""The accelerator's hardware description: a frozen, validated dataclass, presets as data, TOML loading."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path

from dsasim.util import is_int

KIB = 1024
MIB = 1024 * 1024


# Allowed ranges of the numeric fields (inclusive). The upper limits keep every byte and cycle count an exact
# integer far below 2**63 and catch unit mistakes (a clock in GHz written as Hz); they are far beyond real parts.
_INT_RANGES: dict[str, tuple[int, int]] = {
    "sram_bytes": (1, 1 << 50),  # 1 PiB
    "word_bytes": (1, 64),
    "tensorcore_in_channels": (1, 1 << 16),
    "tensorcore_out_channels": (1, 1 << 16),
    "dma_setup_cycles": (0, 10 ** 9),
    "dma_load_channels": (1, 1024),
    "vector_lanes": (1, 1 << 20),
}
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
    vector_lanes: int = 32

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
        if self.word_bytes > self.sram_bytes:
            raise ValueError(f"Accelerator {self.name!r}: word_bytes ({self.word_bytes}) exceeds sram_bytes "
                             f"({self.sram_bytes}); not even one element fits")

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

_FIELDS = {f.name for f in dataclasses.fields(Accelerator)}


def from_toml(path: str | Path) -> Accelerator:
    """Load an Accelerator from a TOML file; `base = "PRESET"` starts from a preset, other keys override it.

    Every problem with the file (missing, a folder, unreadable, not UTF-8, not TOML, a wrong key or value) is a
    ValueError that names the file and, for a value, the key and what is allowed."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"hardware file {path} does not exist; give a preset ({', '.join(PRESETS)}) or the path "
                         f"of a .toml file")
    if path.is_dir():
        raise ValueError(f"hardware file {path} is a folder, not a file; give the path of a .toml file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"hardware file {path}: not UTF-8 text (byte {err.start}); save it as UTF-8 TOML") from None
    except OSError as err:
        raise ValueError(f"hardware file {path}: cannot be read: {err.strerror or err}") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"hardware file {path}: not valid TOML: {err}") from None
    base_name = table.pop("base", None)
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise ValueError(f"hardware file {path}: unknown key(s) {unknown}; valid keys are 'base' and "
                         f"{sorted(_FIELDS)}")
    name = table.pop("name", path.stem)
    if not isinstance(name, str) or not name:
        raise ValueError(f"hardware file {path}: name must be a non-empty string, got {name!r}")
    try:
        if base_name is not None:
            if not isinstance(base_name, str):
                raise ValueError(f"base must be a preset name in quotes ({', '.join(PRESETS)}), got {base_name!r}")
            return dataclasses.replace(preset(base_name), name=name, **table)
        missing = sorted({"sram_bytes", "word_bytes"} - set(table))
        if missing:
            raise ValueError(f"missing {missing}; give them or start from a preset with base = \"blog\"")
        return Accelerator(name=name, **table)
    except ValueError as err:
        raise ValueError(f"hardware file {path}: {err}") from None


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
