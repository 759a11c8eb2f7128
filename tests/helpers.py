"""The one torch-comparison helper every kernel test uses.

`assert_schedule_matches_torch` runs a schedule numerically and checks every output against the workload's
torch reference, recomputed here in float64 (independently of `RunResult.max_abs_err`), with a per-element
tolerance scaled to the reduction length.

Tolerance, per element: the schedule computes in float32 (unit roundoff u = 2**-24). A float32 sum of K products,
in any order (blocked over 16-channel slices or not), is off by at most gamma(K) * sum_i |x_i * w_i| with
gamma(K) = K*u / (1 - K*u) (the worst-case bound), and with overwhelming probability by at most
lambda * sqrt(K) * u * sum_i |x_i * w_i| (Higham & Mary's probabilistic bound: it fails with probability below
2K exp(-lambda^2 / 2), about 5e-11 per element for lambda = 8, K = 2048). The helper uses the smaller of
2 * gamma(K') and 8 * sqrt(K') * u, K' = K + 2 (two extra roundings for float32 intermediates / image + bias);
the sqrt(K) form is tight enough to catch a kernel that accumulates in half precision. For the linear workloads
here (convs, matmuls, elementwise adds feeding them, chains of them) `sum |x_i * w_i|` per output element is the
reference evaluated on |inputs|, so the bound is exact per element. Chained stages add their reduction lengths.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from dsasim import Accelerator, RunResult, Schedule, run_schedule

UNIT_ROUNDOFF_FP32 = 2.0 ** -24


def reduction_length(schedule: Schedule) -> int:
    """Infer K, the number of products summed per output element, from the workload's weight inputs.

    A weight named `weight*` of shape (OC, IC/groups, KH, KW) (or (K, N) for a matmul-style 2-d weight, where
    the reduction is over dim 0; or (G, OC/G, IC/G, KH, KW), a grouped `ConvProblem`'s weight with the group as
    its own axis) contributes IC/groups * KH * KW; chained stages (several weights) add up.
    """
    total = 0
    for name, shape in schedule.workload.inputs.items():
        if not name.startswith("weight"):
            continue
        if len(shape) == 2:
            total += shape[0]
        elif len(shape) == 5:
            total += math.prod(shape[2:])
        else:
            total += math.prod(shape[1:])
    if total == 0:
        raise ValueError(f"cannot infer the reduction length of workload {schedule.workload.name!r} (no "
                         f"'weight*' input); pass reduction=K or atol=...")
    return total


def relative_bound(k: int) -> float:
    """Error bound relative to sum |x_i * w_i| for a float32 reduction of k products (see module docstring)."""
    u = UNIT_ROUNDOFF_FP32
    k += 2
    worst = 2.0 * k * u / (1.0 - k * u) if k * u < 0.5 else float("inf")
    return min(worst, 8.0 * math.sqrt(k) * u)


def assert_schedule_matches_torch(schedule: Schedule, hardware: Accelerator, seed: int = 0,
                                  atol: float | None = None, reduction: int | None = None,
                                  **run_kwargs: Any) -> RunResult:
    """Run `schedule` numerically on `hardware` and check every output against torch (float64).

    atol=None uses the per-element bound described in the module docstring, with K = `reduction` (or inferred
    by `reduction_length`); a number uses that absolute tolerance instead. Extra keyword arguments go to
    `run_schedule` (e.g. scope_ways). Returns the RunResult.
    """
    result = run_schedule(schedule, hardware, numeric=True, seed=seed, **run_kwargs)
    assert result.status == "ok", (f"{schedule.name} on {hardware.name}: status {result.status.value!r}, expected 'ok'"
                                   f"\n{result.message}")
    workload = schedule.workload
    assert result.outputs is not None, f"{schedule.name}: numeric run returned no outputs"
    assert set(result.outputs) == set(workload.outputs), (
        f"{schedule.name}: outputs {sorted(result.outputs)} != workload outputs {sorted(workload.outputs)}")

    inputs = workload.make_inputs(seed)
    for name, arr in inputs.items():
        assert arr.shape == tuple(workload.inputs[name]) and np.any(arr != 0), f"degenerate input {name}"
    as64 = {k: torch.from_numpy(v).to(torch.float64) for k, v in inputs.items()}
    with torch.no_grad():
        reference = workload.reference(**as64)
        if atol is None:
            k = reduction if reduction is not None else reduction_length(schedule)
            magnitude = workload.reference(**{name: t.abs() for name, t in as64.items()})
    assert set(reference) == set(workload.outputs), (
        f"{schedule.name}: reference returns {sorted(reference)}, workload declares {sorted(workload.outputs)}")

    worst_err = 0.0
    for name, shape in workload.outputs.items():
        ours = np.asarray(result.outputs[name], dtype=np.float64)
        ref = reference[name].to(torch.float64).numpy()
        assert ours.shape == tuple(shape) == ref.shape, (
            f"{schedule.name}: output {name} has shape {ours.shape}, declared {tuple(shape)}, reference "
            f"{ref.shape}")
        assert np.all(np.isfinite(ours)), f"{schedule.name}: output {name} has non-finite values"
        err = np.abs(ours - ref)
        if atol is None:
            tol = relative_bound(k) * magnitude[name].to(torch.float64).numpy() + 1e-30
        else:
            tol = np.full(ref.shape, float(atol))
        bad = err > tol
        if bad.any():
            excess = np.unravel_index(int(np.argmax(err - tol)), err.shape)
            raise AssertionError(
                f"{schedule.name} on {hardware.name}: output {name} differs from torch at {int(bad.sum())} of "
                f"{err.size} elements; worst at {tuple(int(i) for i in excess)}: ours {ours[excess]!r}, torch "
                f"{ref[excess]!r}, |diff| {err[excess]:.3g} > tol {tol[excess]:.3g}; max |diff| {err.max():.3g}")
        worst_err = max(worst_err, float(err.max()))

    # The library's own metric must agree with the independent one.
    assert result.max_abs_err is not None
    assert math.isclose(result.max_abs_err, worst_err, rel_tol=1e-9, abs_tol=1e-12), (
        f"{schedule.name}: RunResult.max_abs_err {result.max_abs_err!r} != independent max error {worst_err!r}")
    return result
