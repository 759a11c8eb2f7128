"""Packaging, the installed distribution: what this environment's `pip install [-e] .` produced. dsasim is its
only top-level import name, its entry points are pyproject's (all under dsasim.kernels), and from outside the
checkout `import kernels` fails while `import dsasim.kernels` works. Metadata from before kernels/ moved under
dsasim fails here: reinstall (the message says how)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REINSTALL = "stale install: reinstall dsasim (`pip install -e '.[test]'` in the repository root)"


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
    configured = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert installed == {g: dict(e) for g, e in configured.items() if g.startswith("dsasim.")}, REINSTALL
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
