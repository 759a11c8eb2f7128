"""Packaging, the build configuration: kernels/ installs as `dsasim.kernels`, never as a top-level `kernels` (PyPI's
`kernels` package owns that import name: with both installed one would silently shadow the other), and the entry
points follow it. pyproject.toml is read as text: what any install will produce. The installed distribution's
metadata is checked in test_packaging_install.py."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _configured_entry_points() -> dict[str, dict[str, str]]:
    """pyproject's dsasim.* entry-point groups: group -> {name: 'module:attribute'}."""
    groups = PYPROJECT["project"]["entry-points"]
    return {group: dict(entries) for group, entries in groups.items() if group.startswith("dsasim.")}


def test_the_build_installs_kernels_under_dsasim_only():
    """Every package the build finds is dsasim or below it, and kernels/ is mapped to dsasim.kernels."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    include = setuptools["packages"]["find"]["include"]
    assert include and all(p == "dsasim" or p.startswith("dsasim.") for p in include), include
    assert setuptools["package-dir"] == {"dsasim.kernels": "kernels"}
    # the source checkout's own view of the same mapping (PYTHONPATH=checkout): dsasim/kernels is kernels/
    assert (ROOT / "dsasim" / "kernels").resolve() == (ROOT / "kernels").resolve()


def test_every_entry_point_names_a_dsasim_kernels_object():
    """Each configured entry point is `dsasim.kernels.MODULE:ATTRIBUTE` and that object exists."""
    groups = _configured_entry_points()
    assert set(groups) >= {"dsasim.schedules", "dsasim.loopnest_runner", "dsasim.levelnest_runner",
                           "dsasim.fused_runner"}
    for group, entries in groups.items():
        for name, target in entries.items():
            module, _, attribute = target.partition(":")
            assert module.startswith("dsasim.kernels."), f"{group} {name} = {target}: not under dsasim.kernels"
            assert getattr(importlib.import_module(module), attribute) is not None


def test_kernel_runner_finds_each_kernel_by_kind():
    """One lookup for the three runner groups: each kind finds its own kernel; an unknown kind is a ValueError."""
    from dsasim.cli.common import kernel_runner

    assert {kind: kernel_runner(kind).__name__ for kind in ("loopnest", "levelnest", "fused")} == \
        {"loopnest": "run_loopnest", "levelnest": "run_levelnest", "fused": "run_fused"}
    with pytest.raises(ValueError, match="unknown kernel runner kind 'fusd'; known: loopnest, levelnest, fused"):
        kernel_runner("fusd")
