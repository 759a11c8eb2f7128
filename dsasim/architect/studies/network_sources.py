"""Where a network comes from: a front end `dsasim network SPEC` reads, as a can-load / load pair.

`network.NETWORK_SOURCES` lists them in the order they are asked (a preset's name, then FILE.onnx, then
MODULE:ATTR / FILE.py:ATTR); `network.load_network` lets the first that can load a spec load it. A new source
(another model format) is one `NetworkSource` added there, its reader in a module of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["NetworkSource", "first_source"]


@dataclass(frozen=True)
class NetworkSource:
    """One front end: its name, whether it can load a spec, and how: (spec, input shape or None) -> Network."""

    name: str
    can_load: Callable[[str], bool]
    load: Callable[[str, "tuple[int, ...] | None"], Any]

    def __post_init__(self) -> None:
        if not self.name or not callable(self.can_load) or not callable(self.load):
            raise ValueError(f"NetworkSource {self.name!r}: needs a name and callable can_load and load")


def first_source(sources: Sequence[NetworkSource], spec: str) -> NetworkSource | None:
    """The first of `sources` that can load `spec`, else None."""
    return next((source for source in sources if source.can_load(spec)), None)
