"""The accelerator's hardware description: a frozen, validated dataclass, presets as data, TOML loading."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path

KIB = 1024
MIB = 1024 * 1024


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
        ints = {
            "sram_bytes": self.sram_bytes,
            "word_bytes": self.word_bytes,
            "tensorcore_in_channels": self.tensorcore_in_channels,
            "tensorcore_out_channels": self.tensorcore_out_channels,
            "dma_load_channels": self.dma_load_channels,
            "vector_lanes": self.vector_lanes,
        }
        for field_name, value in ints.items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Accelerator {self.name!r}: {field_name} must be a positive integer, got {value!r}")
        if isinstance(self.dma_setup_cycles, bool) or not isinstance(self.dma_setup_cycles, int) \
                or self.dma_setup_cycles < 0:
            raise ValueError(f"Accelerator {self.name!r}: dma_setup_cycles must be an integer >= 0, "
                             f"got {self.dma_setup_cycles!r}")
        for field_name in ("clock_hz", "dram_bytes_per_cycle"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Accelerator {self.name!r}: {field_name} must be a positive number "
                                 f"(zero bandwidth or clock would make every transfer infinite), got {value!r}")
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
    """Load an Accelerator from a TOML file; `base = "PRESET"` starts from a preset, other keys override it."""
    path = Path(path)
    try:
        table = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"hardware file {path}: not valid TOML: {err}") from None
    base_name = table.pop("base", None)
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise ValueError(f"hardware file {path}: unknown key(s) {unknown}; valid keys are 'base' and "
                         f"{sorted(_FIELDS)}")
    if base_name is not None:
        base = preset(base_name)
        return dataclasses.replace(base, **{"name": path.stem, **table})
    missing = sorted({"sram_bytes", "word_bytes"} - set(table))
    if missing:
        raise ValueError(f"hardware file {path}: missing {missing}; give them or start from a preset with "
                         f"base = \"blog\"")
    return Accelerator(**{"name": path.stem, **table})


def preset(name: str) -> Accelerator:
    """Return the preset Accelerator called `name`."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown hardware preset {name!r}; presets are {sorted(PRESETS)}, "
                         f"or pass a path to a .toml file") from None


def load_hardware(spec: str | Path) -> Accelerator:
    """Resolve a preset name or a TOML file path to an Accelerator."""
    if str(spec) in PRESETS:
        return PRESETS[str(spec)]
    path = Path(spec)
    if path.suffix == ".toml" or path.exists():
        if not path.exists():
            raise ValueError(f"hardware file {path} does not exist")
        return from_toml(path)
    return preset(str(spec))
