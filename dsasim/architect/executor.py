"""Where a batch of independent tasks runs: in this process, on a process pool, or on a Dask cluster.

`open_executor(spec, jobs)` gives an executor whose `run(fn, tasks, label, progress)` calls `fn(*task)` for every
task and returns the results **in task order** (whatever order they finish in), so a sweep's output does not depend
on which executor ran it. Specs:
  process             a pool of `jobs` worker processes (forked; in this process when jobs is 1)
  dask                a local Dask cluster of `jobs` single-threaded worker processes, started and closed here
  dask://HOST:PORT    a running `dask.distributed` scheduler (its workers must have dsasim installed)
Dask needs the `distributed` package (`pip install 'dsasim[dask]'`). Progress is a tqdm bar on stderr.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

__all__ = ["DaskExecutor", "InProcess", "ProcessPool", "open_executor"]


def _bar(total: int, label: str, progress: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="task", disable=not progress, file=sys.stderr, leave=False,
                dynamic_ncols=True)


class InProcess:
    """Runs every task here, one after the other."""

    name = "in-process"

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple], label: str = "", progress: bool = False) -> list:
        """fn(*task) for every task, in order."""
        out = []
        with _bar(len(tasks), label, progress) as bar:
            for task in tasks:
                out.append(fn(*task))
                bar.update(1)
        return out

    def close(self) -> None:
        pass


class ProcessPool:
    """A pool of forked worker processes (the tasks' functions and arguments are pickled by reference/value)."""

    name = "process"

    def __init__(self, jobs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple], label: str = "", progress: bool = False) -> list:
        """fn(*task) for every task on the pool; results in task order."""
        from concurrent.futures import as_completed

        futures = {self.pool.submit(fn, *task): i for i, task in enumerate(tasks)}
        out: list[Any] = [None] * len(tasks)
        with _bar(len(tasks), label, progress) as bar:
            for future in as_completed(futures):
                out[futures[future]] = future.result()
                bar.update(1)
        return out

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)


class DaskExecutor:
    """Tasks on a Dask cluster: a local one started here (`address` None) or a running scheduler's."""

    name = "dask"

    def __init__(self, jobs: int, address: str | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError("--executor dask needs the distributed package: pip install 'dsasim[dask]' "
                             "(or pip install distributed)") from None
        self.cluster = None
        if address is None:
            import dask

            # Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in its workers, which turns off glibc's adaptive mmap
            # threshold: every large numpy temporary of the search is then mapped and unmapped afresh, and on these
            # VMs first-touching pages is slow (the workers spent as long in the kernel as in the search)
            with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
                self.cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                            dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(address, timeout=10)
            except OSError as err:
                raise ValueError(f"cannot reach the Dask scheduler at {address}: {err}") from None

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple], label: str = "", progress: bool = False) -> list:
        """fn(*task) for every task on the cluster; results in task order."""
        from distributed import as_completed

        futures = [self.client.submit(fn, *task, pure=False) for task in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(tasks)
        with _bar(len(tasks), label, progress) as bar:
            for future in as_completed(futures):
                out[index[future.key]] = future.result()
                bar.update(1)
        return out

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def open_executor(spec: str, jobs: int) -> InProcess | ProcessPool | DaskExecutor:
    """The executor a spec names (see the module docstring); close() it when done. ValueError for a bad spec."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if spec == "process":
        return InProcess() if jobs == 1 else ProcessPool(jobs)
    if spec == "dask":
        return DaskExecutor(jobs)
    if spec.startswith("dask://"):
        where = spec[len("dask://"):]
        if not where or ":" not in where:
            raise ValueError(f"executor {spec!r}: give the scheduler as dask://HOST:PORT, e.g. dask://127.0.0.1:8786")
        return DaskExecutor(jobs, f"tcp://{where}")
    raise ValueError(f"unknown executor {spec!r}: use process, dask or dask://HOST:PORT")
