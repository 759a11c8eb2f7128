"""Shared pytest setup: make `tests/` importable so test modules can `from helpers import ...`."""

from __future__ import annotations

import os
import sys

import pytest
import torch

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)


@pytest.fixture(autouse=True, scope="session")
def _single_torch_thread():
    """Tests issue many tile-sized convs: extra intra-op threads only spin (50x slower on 2 busy cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
