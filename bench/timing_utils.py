"""Shared helpers of the benchmark scripts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Best wall seconds of `repeat` calls of fn, and the last call's value."""
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def paired(repeat: int, first: Callable[[], Any], second: Callable[[], Any]) -> tuple[float, float, float]:
    """`first` and `second` called in turn `repeat` times (after one warm-up call of each): the median wall
    seconds of each and the median of the pairwise ratios first / second (a drift of the machine's speed, which
    both of a pair see, cancels in it)."""
    import statistics

    first(), second()
    pairs = []
    for _ in range(repeat):
        start = time.perf_counter()
        first()
        middle = time.perf_counter()
        second()
        pairs.append((middle - start, time.perf_counter() - middle))
    return (statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs),
            statistics.median(a / b for a, b in pairs))


def export_revision(rev: str, into: Path, paths: tuple[str, ...] = ("dsasim", "setup.py", "pyproject.toml")) -> Path:
    """`paths` of git revision `rev` exported into `into`, dsasim built in place if it has Cython modules."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *paths], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    if list((into / "dsasim").rglob("*.pyx")):
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=into, check=True,
                       capture_output=True)
    return into
