"""Packaging: kernels/ installs as `dsasim.kernels`, never as a top-level `kernels` (PyPI's `kernels` package owns
that import name: with both installed one would silently shadow the other), and the entry points follow it.

Two views are checked: the build configuration (pyproject.toml, read as text: what any install will produce) and
the installed distribution's metadata (what this environment's `pip install [-e] .` produced: stale metadata from
before the rename fails here, and is fixed by reinstalling)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REINSTALL = "stale install: reinstall dsasim (`pip install -e '.[test]'` in the repository root)"


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


def _dsasim_distribution():
    try:
        return distribution("dsasim")
    except PackageNotFoundError:
        pytest.fail("dsasim is not installed in this environment: `pip install -e '.[test]'`")


def test_the_installed_distribution_has_no_top_level_kernels():
    """The installed metadata: dsasim is the one top-level name (top_level.txt, the files it installed), and no
    import name `kernels` belongs to it."""
    dist = _dsasim_distribution()
    top_level = (dist.read_text("top_level.txt") or "").split()
    assert top_level == ["dsasim"], f"top-level names {top_level}; {REINSTALL}"
    record = dist.read_text("RECORD")  # the files an install wrote (an .egg-info's SOURCES.txt lists sources)
    installed = [line.split(",")[0] for line in (record or "").splitlines()]
    assert not [f for f in installed if f.split("/")[0] == "kernels"], REINSTALL
    assert "dsasim" not in packages_distributions().get("kernels", []), REINSTALL


def test_the_installed_entry_points_are_the_configured_ones():
    """The entry points this environment's dsasim registered are pyproject's, all under dsasim.kernels."""
    dist = _dsasim_distribution()
    installed: dict[str, dict[str, str]] = {}
    for entry in dist.entry_points:
        if entry.group.startswith("dsasim."):
            installed.setdefault(entry.group, {})[entry.name] = entry.value
    assert installed == _configured_entry_points(), REINSTALL
    from dsasim.cli.common import RUNNER_KINDS, kernel_runner
    for kind in RUNNER_KINDS:
        assert kernel_runner(kind).__module__.startswith("dsasim.kernels."), REINSTALL


def test_kernels_is_not_importable_outside_the_checkout(tmp_path):
    """From another folder, without PYTHONPATH (the installed package alone): `import kernels` fails,
    `import dsasim.kernels.blog_demos` works."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = ("import importlib.util, dsasim.kernels.blog_demos; "
             "print(importlib.util.find_spec('kernels') is None, dsasim.kernels.blog_demos.__name__)")
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"{run.stderr.strip()[-300:]}; {REINSTALL}"
    assert run.stdout.split() == ["True", "dsasim.kernels.blog_demos"], REINSTALL


def test_kernel_runner_finds_each_kernel_by_kind():
    """One lookup for the three runner groups: each kind finds its own kernel; an unknown kind is a ValueError."""
    from dsasim.cli.common import kernel_runner

    assert {kind: kernel_runner(kind).__name__ for kind in ("loopnest", "levelnest", "fused")} == \
        {"loopnest": "run_loopnest", "levelnest": "run_levelnest", "fused": "run_fused"}
    with pytest.raises(ValueError, match="unknown kernel runner kind 'fusd'; known: loopnest, levelnest, fused"):
        kernel_runner("fusd")
