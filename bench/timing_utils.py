"""Shared helpers of the benchmark scripts."""

from __future__ import annotations

import time
from typing import Any, Callable


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Best wall seconds of `repeat` calls of fn, and the last call's value."""
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value
