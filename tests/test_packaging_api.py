"""The package facade `dsasim`: its public names, grouped by audience and loaded on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import dsasim

# `dsasim.__all__` as it was before the names were grouped (ca13671), copied by hand: each must stay importable
EXPORTED_BEFORE = (
    "Accelerator", "CoherenceError", "Conv2dBoundsInfer", "ConvProblem", "Counters", "CrossSessionError",
    "EventKind", "GlobalHierarchy", "LevelError", "LoopNest", "MatmulProblem", "PRESETS", "ReadOnlyError",
    "RegionError", "ReuseError", "RunResult", "Schedule", "ScheduleError", "Segment", "Segments", "Session",
    "SessionStateError", "SramOverflowError", "StaleTileError", "Status", "TensorCore", "TensorReport",
    "TensorTraffic", "Tile", "Trace", "TracedArray", "UnfinishedError", "VectorUnit", "Workload", "analyze",
    "bind_tensors", "load_hardware", "lower_bound", "preset", "run_schedule", "search",
)


def test_every_public_name_resolves_to_its_module_object():
    """Each name of `__all__` is the object its audience table says defines it, and appears once."""
    assert len(dsasim.__all__) == len(set(dsasim.__all__))
    for name in dsasim.__all__:
        module = next(names[name] for names in dsasim.AUDIENCES.values() if name in names)
        assert getattr(dsasim, name) is getattr(importlib.import_module(module), name), name
    assert not set(dsasim.DEPRECATED) & set(dsasim.__all__)


def test_the_public_api_names_what_each_audience_needs():
    """The names the issue asked for are public, each in its audience, and the internals are not."""
    audiences = dsasim.AUDIENCES
    assert {"Session", "GlobalHierarchy", "TensorCore", "Schedule"} <= set(audiences["writing schedules"])
    assert {"Accelerator", "MemoryLevel", "preset", "load_hardware"} <= set(audiences["hardware"])
    assert {"run_schedule", "simulate"} <= set(audiences["running and timing"])
    assert {"ConvChain", "GemmChain", "Network", "load_network", "search"} <= set(audiences["architects"])
    assert not {"Counters", "TensorTraffic"} & set(dsasim.__all__)


def test_every_name_exported_before_is_still_importable():
    """Nothing exported before the grouping disappears: public now, or deprecated with a warning that names
    its module."""
    for name in EXPORTED_BEFORE:
        if name in dsasim.__all__:
            continue
        assert name in dsasim.DEPRECATED, f"{name} was exported and is neither public nor deprecated"
        with pytest.warns(DeprecationWarning, match=f"dsasim.{name} is internal.*{dsasim.DEPRECATED[name]}"):
            value = getattr(dsasim, name)
        assert value is getattr(importlib.import_module(dsasim.DEPRECATED[name]), name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'dsasim' has no attribute 'Sesion'"):
        dsasim.Sesion  # noqa: B018
    with pytest.raises(ImportError):
        exec("from dsasim import Sesion", {})


def test_import_dsasim_loads_no_model():
    """`import dsasim` alone loads neither numpy nor any dsasim submodule (the names load on first use); one
    name loads its own module."""
    probe = ("import sys, dsasim; first = sorted(m for m in sys.modules if m == 'numpy' or m.startswith('dsasim.')); "
             "dsasim.preset; print(first, 'dsasim.hardware' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "True"], out


def test_the_kernels_use_no_deprecated_name():
    """The shipped kernels import only public names from the facade (a DeprecationWarning is an error here)."""
    probe = ("import warnings; warnings.simplefilter('error', DeprecationWarning); "
             "import dsasim.kernels.blog_demos, dsasim.kernels.resnet_schedules, dsasim.kernels.conv_mapping, "
             "dsasim.kernels.loopnest_kernel, dsasim.kernels.fused_kernel, dsasim.kernels.gemm_chain_kernel")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-500:]


def test_scope_is_the_class_and_global_hierarchy_the_blogs_alias_of_it():
    """`Scope` names what the blog calls `GlobalHierarchy` (one scope, not a hierarchy): the same class, both
    exported, and a session's `scope()` makes one."""
    import dsasim
    from dsasim import GlobalHierarchy, Scope, Session, preset

    assert GlobalHierarchy is Scope
    assert {"Scope", "GlobalHierarchy"} <= set(dsasim.AUDIENCES["writing schedules"])
    s = Session(preset("blog"), numeric=False)
    assert type(s.scope("a")) is Scope
