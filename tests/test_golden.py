"""Behaviour frozen before the architecture rebuild: each golden command's `--json` is byte-identical to the file
recorded in `tests/golden/` (see `tests/golden/commands.py`; re-record only for a documented behaviour change)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("golden_commands", Path(__file__).parent / "golden" / "commands.py")
golden = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(golden)


@pytest.mark.parametrize("name", list(golden.COMMANDS))
def test_golden_json_unchanged(name: str, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.json"
    proc = golden.run(name, out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = (golden.HERE / f"{name}.json").read_bytes()
    assert out.read_bytes() == expected, f"{name}: --json differs from tests/golden/{name}.json"
