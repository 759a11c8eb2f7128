"""A network preset over values of one of its declared parameters (`sweep-sram --network ... --vary-network
batch=1,8,32`): one network spec per value, its other parameters kept.

Distinct from `--vary FIELD=...` (a hardware grid): a preset's parameters change the workload (its shapes), so each
value is its own network and its own sweep (`sweep_network`), not a hardware of one sweep. Bad input raises
ValueError with one line: a network that is not a preset with parameters, a parameter it does not declare, an
empty or repeated value, and a value the preset refuses (`NetworkPreset.parameter_values`: e.g. a context past the
model's positions), every value checked before any network is traced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NetworkVariation", "vary_network_specs"]


@dataclass(frozen=True)
class NetworkVariation:
    """One sweep (`NetworkSweep`) per value of a preset's parameter (`vary`: the option's text, e.g. batch=1,8,32)."""

    vary: str
    sweeps: tuple[Any, ...]

    def __post_init__(self) -> None:
        if not self.sweeps:
            raise ValueError("NetworkVariation needs at least one sweep")

    def to_json(self) -> dict[str, Any]:
        """vary_network (the option's text) and sweeps (each network's sweep JSON, in the order of the values)."""
        return {"vary_network": self.vary, "sweeps": [s.to_json() for s in self.sweeps]}


def vary_network_specs(spec: str, vary: str) -> list[str]:
    """The specs of preset `spec` (e.g. 'llama3-8b-layer:phase=decode,context=4096') with the parameter `vary`
    names ('batch=1,8,32') set to each of its values, in the order given."""
    from dsasim.architect.studies.network_models import PRESETS

    spec = spec.strip()
    head, _, tail = spec.partition(":")
    preset = PRESETS.get(head)
    if preset is None or not preset.parameters:
        with_parameters = sorted(name for name, p in PRESETS.items() if p.parameters)
        raise ValueError(f"--vary-network needs a preset with parameters (one of {', '.join(with_parameters)}), "
                         f"got {spec!r}")
    name, sep, values_text = vary.partition("=")
    name = name.strip()
    by_name = {alias: p.name for p in preset.parameters for alias in (p.name,) + p.aliases}
    if not sep or name not in by_name:
        raise ValueError(f"--vary-network {vary!r}: give PARAMETER=V1,V2,... with a parameter {head} declares "
                         f"({', '.join(p.name for p in preset.parameters)}), e.g. batch=1,8,32")
    values = [v.strip() for v in values_text.split(",")]
    if not values or any(not v for v in values):
        raise ValueError(f"--vary-network {vary!r}: an empty value; give PARAMETER=V1,V2,... e.g. {name}=1,8,32")
    if len(set(values)) != len(values):
        raise ValueError(f"--vary-network {vary!r}: a value given twice; give each once")
    canonical = by_name[name]
    # the spec's other parameters kept; the varied one (under any alias) replaced by each value
    kept = [item.strip() for item in tail.split(",") if item.strip()] if tail else []
    kept = [item for item in kept if by_name.get(item.partition("=")[0].strip()) != canonical]
    specs = [f"{head}:" + ",".join(kept + [f"{name}={value}"]) for value in values]
    for one in specs:  # every value checked now: a bad last value is refused before the first network is traced
        try:
            preset.parameter_values(one, one.partition(":")[2])
        except ValueError as err:
            raise ValueError(f"--vary-network {vary!r}: {err}") from None
    return specs
