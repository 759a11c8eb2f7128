"""dsasim: a trace-driven simulator for deep-learning accelerators (DSAs).

Write a tiled schedule as plain Python over traced DDR tensors and SRAM scopes; get real numbers checked
against torch, honest DDR traffic, and a trace for timing and analysis.

The public names below are grouped by who uses them (`AUDIENCES`). Each is loaded on first use (PEP 562), so
that `import dsasim` stays fast: the command line's `--help` and a script that needs one name do not pay for
numpy, torch or the search.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# audience -> {public name: the module that defines it}; `__all__` is these names, in this order
AUDIENCES: dict[str, dict[str, str]] = {
    # writing schedules: a Session over traced DDR tensors, SRAM scopes, the TensorCore and the vector unit
    "writing schedules": {
        "Session": "dsasim.traced.session",
        "GlobalHierarchy": "dsasim.traced.scope",  # the blog's name of a Scope (an alias)
        "Scope": "dsasim.traced.scope",
        "TracedArray": "dsasim.traced.traced_array",
        "Tile": "dsasim.traced.tile",
        "TensorCore": "dsasim.traced.tensorcore",
        "VectorUnit": "dsasim.traced.tensorcore",
        "Segment": "dsasim.traced.segments",
        "Segments": "dsasim.traced.segments",
        "Conv2dBoundsInfer": "dsasim.traced.bounds",
        "Schedule": "dsasim.traced.schedule",
        "Workload": "dsasim.traced.schedule",
        "bind_tensors": "dsasim.traced.schedule",
    },
    # what a schedule's mistakes raise (all ScheduleError)
    "schedule errors": {
        "ScheduleError": "dsasim.errors",
        "CoherenceError": "dsasim.errors",
        "CrossSessionError": "dsasim.errors",
        "LevelError": "dsasim.errors",
        "ReadOnlyError": "dsasim.errors",
        "RegionError": "dsasim.errors",
        "ReuseError": "dsasim.errors",
        "SessionStateError": "dsasim.errors",
        "SramOverflowError": "dsasim.errors",
        "StaleTileError": "dsasim.errors",
        "UnfinishedError": "dsasim.errors",
    },
    # the hardware: an accelerator, its memory levels, the presets and TOML files
    "hardware": {
        "Accelerator": "dsasim.hardware",
        "MemoryLevel": "dsasim.hardware",
        "PRESETS": "dsasim.hardware",
        "preset": "dsasim.hardware",
        "load_hardware": "dsasim.hardware",
    },
    # running and timing: run a schedule, read its report and trace, time the trace
    "running and timing": {
        "run_schedule": "dsasim.traced.schedule",
        "RunResult": "dsasim.traced.schedule",
        "Status": "dsasim.traced.schedule",
        "TensorReport": "dsasim.traced.schedule",
        "Trace": "dsasim.traced.trace",
        "EventKind": "dsasim.traced.trace",
        "simulate": "dsasim.timing",
        "SimResult": "dsasim.timing",
    },
    # architects: loop nests, their closed-form model and search, chains of layers, whole networks
    "architects": {
        "ConvProblem": "dsasim.architect.nests.loopnest",
        "MatmulProblem": "dsasim.architect.nests.loopnest",
        "LoopNest": "dsasim.architect.nests.loopnest",
        "LevelNest": "dsasim.architect.model.hierarchy",
        "analyze": "dsasim.architect.model.analytic",
        "lower_bound": "dsasim.architect.model.lower_bounds",
        "search": "dsasim.architect.search.layer_search",
        "ConvChain": "dsasim.architect.problems.chain",
        "parse_chain": "dsasim.architect.problems.chain_catalogue",
        "GemmChain": "dsasim.architect.search.gemm_chain",
        "parse_gemm_chain": "dsasim.architect.search.gemm_chain",
        "search_chain": "dsasim.architect.search.fused_search",
        "Target": "dsasim.architect.studies.target",
        "Choice": "dsasim.architect.studies.target",
        "SearchOptions": "dsasim.architect.studies.target",
        "target_of": "dsasim.architect.studies.target_kinds",
        "TargetSweep": "dsasim.architect.studies.target_sweep",
        "Network": "dsasim.architect.studies.network",
        "load_network": "dsasim.architect.studies.network",
        "evaluate_network": "dsasim.architect.studies.network_eval",
        "sweep_network": "dsasim.architect.studies.network_eval",
    },
}

# exported before the public names were grouped; still importable, with a DeprecationWarning naming their module
DEPRECATED: dict[str, str] = {
    "Counters": "dsasim.traced.counters",  # a Session's internal counters: read RunResult / TensorReport instead
    "TensorTraffic": "dsasim.traced.counters",  # one tensor's internal counters: read TensorReport instead
}

_PUBLIC: dict[str, str] = {name: module for names in AUDIENCES.values() for name, module in names.items()}
__all__ = list(_PUBLIC)


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then cached here); AttributeError otherwise."""
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    if name in DEPRECATED:
        warnings.warn(f"dsasim.{name} is internal and no longer exported; import it from {DEPRECATED[name]} "
                      f"if you must", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(DEPRECATED[name]), name)
    raise AttributeError(f"module 'dsasim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
