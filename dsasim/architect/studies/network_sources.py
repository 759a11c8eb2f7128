"""Where a network comes from: the front ends `dsasim network SPEC` reads, as a registry of can-load / load pairs.

A new source (another model format) is one `NetworkSource` appended to `NETWORK_SOURCES`; `load_network` asks each
in order whether it can load the spec and lets the first that can load it. Order matters only where two could
claim a spec: a preset's name is tried first, then a file's suffix (FILE.onnx), then MODULE:ATTR / FILE.py:ATTR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from dsasim.architect.studies.network import Network

__all__ = ["NETWORK_SOURCES", "NetworkSource", "source_for"]


@dataclass(frozen=True)
class NetworkSource:
    """One front end: its name, whether it can load a spec, and how (spec, input shape or None) -> Network."""

    name: str
    can_load: Callable[[str], bool]
    load: Callable[[str, "tuple[int, ...] | None"], "Network"]

    def __post_init__(self) -> None:
        if not self.name or not callable(self.can_load) or not callable(self.load):
            raise ValueError(f"NetworkSource {self.name!r}: needs a name and callable can_load and load")


def _is_onnx_spec(spec: str) -> bool:
    return spec.strip().lower().endswith(".onnx")


def _load_preset(spec: str, input_shape: tuple[int, ...] | None) -> Network:
    from dsasim.architect.studies.network import load_preset
    return load_preset(spec, input_shape)


def _is_preset(spec: str) -> bool:
    from dsasim.architect.studies.network import is_preset_spec
    return is_preset_spec(spec)


def _load_onnx(spec: str, input_shape: tuple[int, ...] | None) -> Network:
    from dsasim.architect.studies.network_onnx import load_onnx_network
    return load_onnx_network(spec.strip(), input_shape)


def _is_user_module(spec: str) -> bool:
    from dsasim.architect.studies.network import is_user_module_spec
    return is_user_module_spec(spec)


def _load_user_module(spec: str, input_shape: tuple[int, ...] | None) -> Network:
    from dsasim.architect.studies.network import load_user_module
    return load_user_module(spec, input_shape)


NETWORK_SOURCES: tuple[NetworkSource, ...] = (
    NetworkSource("preset", _is_preset, _load_preset),
    NetworkSource("onnx", _is_onnx_spec, _load_onnx),
    NetworkSource("module", _is_user_module, _load_user_module),
)


def source_for(spec: str) -> NetworkSource:
    """The first source that can load `spec`; ValueError naming what is accepted when none can."""
    for source in NETWORK_SOURCES:
        if source.can_load(spec):
            return source
    from dsasim.architect.studies.network import unknown_network
    raise unknown_network(spec)
