"""Where a batch of independent tasks runs: in this process, on a process pool, or on a Dask cluster.

`open_executor(spec, jobs)` gives an executor whose `run(fn, tasks, label, progress)` calls `fn(*task)` for every
task and returns the results **in task order** (whatever order they finish in), so a sweep's output does not depend
on which executor ran it. Specs:
  process             a pool of `jobs` worker processes (forked; in this process when jobs is 1)
  dask                a local Dask cluster of `jobs` single-threaded worker processes, started and closed here
  dask://HOST:PORT    a running `dask.distributed` scheduler (its workers must have dsasim installed)
Dask needs the `distributed` package (`pip install 'dsasim[dask]'`). Progress is a tqdm bar on stderr.

Failures are bounded: when a Dask cluster has had no worker for WORKERLESS_TIMEOUT_SECONDS, a task's worker died
too often, or a pool's worker process died, `run` raises `WorkersLostError` (the sweep ends with that error
instead of waiting forever). A local cluster's workers ignore Ctrl-C: the command that started them is interrupted
alone and closes them (no worker tracebacks).
"""

from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from dsasim.util import parse_whole

__all__ = ["DaskExecutor", "InProcess", "ProcessPool", "WorkersLostError", "open_executor", "parse_dask_address",
           "WORKERLESS_TIMEOUT_SECONDS"]

WORKERLESS_TIMEOUT_SECONDS = 60.0  # a cluster with no worker this long is given up on (a restart takes ~2 s)
_POLL_SECONDS = 1.0  # how often a Dask run looks at its workers while no task finishes


class WorkersLostError(RuntimeError):
    """The executor's workers are gone: a Dask cluster without any for WORKERLESS_TIMEOUT_SECONDS, a task that killed
    its Dask workers, or a dead process of a pool."""


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

        from concurrent.futures.process import BrokenProcessPool

        futures = {self.pool.submit(fn, *task): i for i, task in enumerate(tasks)}
        out: list[Any] = [None] * len(tasks)
        done = 0
        with _bar(len(tasks), label, progress) as bar:
            for future in as_completed(futures):
                try:
                    out[futures[future]] = future.result()
                except BrokenProcessPool:  # a worker was killed (e.g. out of memory): the pool cannot go on
                    raise WorkersLostError(f"a worker process died (killed, or out of memory); {len(tasks) - done:,} "
                                           f"of {len(tasks):,} tasks unfinished") from None
                done += 1
                bar.update(1)
        return out

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)


class DaskExecutor:
    """Tasks on a Dask cluster: a local one started here (`address` None) or a running scheduler's."""

    name = "dask"

    def __init__(self, jobs: int, address: str | None = None,
                 workerless_timeout_seconds: float = WORKERLESS_TIMEOUT_SECONDS) -> None:
        if not workerless_timeout_seconds > 0:
            raise ValueError(f"workerless_timeout_seconds must be > 0, got {workerless_timeout_seconds!r}")
        self.workerless_timeout_seconds = workerless_timeout_seconds
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
            with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}), \
                    _sigint_blocked():
                self.cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                            dashboard_address=None, preload=[__name__])  # dask_setup: no Ctrl-C
                self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(address, timeout=10)
            except OSError as err:
                raise ValueError(f"cannot reach the Dask scheduler at {address}: {err}") from None

    def run(self, fn: Callable[..., Any], tasks: Sequence[tuple], label: str = "", progress: bool = False) -> list:
        """fn(*task) for every task on the cluster; results in task order. WorkersLostError when the cluster has
        had no worker for `workerless_timeout_seconds`, or a task's workers died too often (KilledWorker)."""
        from distributed import KilledWorker, wait

        futures = [self.client.submit(fn, *task, pure=False) for task in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(tasks)
        pending = list(futures)
        workerless_since: float | None = None
        with _bar(len(tasks), label, progress) as bar:
            while pending:
                try:
                    done, not_done = wait(pending, timeout=_POLL_SECONDS, return_when="FIRST_COMPLETED")
                except TimeoutError:  # nothing finished: are there still workers to finish it?
                    workerless_since = self._check_workers(workerless_since, len(pending), len(tasks))
                    continue
                workerless_since = None
                for future in done:
                    try:
                        out[index[future.key]] = future.result()
                    except KilledWorker as err:
                        self._cancel(pending)
                        raise WorkersLostError(f"a task killed the Dask workers that ran it ({err}); "
                                               f"{len(pending):,} of {len(tasks):,} tasks unfinished") from None
                    bar.update(1)
                pending = list(not_done)
        return out

    def _check_workers(self, since: float | None, unfinished: int, total: int) -> float | None:
        """When the cluster has no worker: since when (monotonic seconds), or WorkersLostError past the timeout."""
        if self.client.nthreads():
            return None
        now = time.monotonic()
        if since is None:
            return now
        if now - since >= self.workerless_timeout_seconds:
            raise WorkersLostError(f"the Dask cluster has had no worker for {self.workerless_timeout_seconds:.0f} s; "
                                   f"{unfinished:,} of {total:,} tasks unfinished (restart the workers, or use "
                                   f"--executor process)")
        return since

    def _cancel(self, futures: Sequence[Any]) -> None:
        try:
            self.client.cancel(list(futures))
        except Exception:  # noqa: BLE001 - best effort: the error being raised says what went wrong
            pass

    def close(self) -> None:
        """Close the client and a local cluster (its busy workers are killed after a few seconds); Dask's warnings
        about the tasks this cancels are left out (errors still show)."""
        import logging

        log = logging.getLogger("distributed")
        level = log.level
        log.setLevel(logging.ERROR)
        try:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        finally:
            log.setLevel(level)


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread while a local cluster starts: a Ctrl-C then is delivered when it has started
    (a few seconds), so that `close` can stop it whole, rather than into the middle of its start. No-op where
    signals are not ours (not the main thread)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def dask_setup(worker: Any) -> None:
    """Dask preload hook, run in each worker of a local cluster as it starts (in its main thread): a Ctrl-C in the
    terminal reaches the whole process group, and only the command that started the workers acts on it (it
    closes them); a worker that took it would print its own traceback. Its warnings about the tasks cancelled then
    are left out too (errors still show)."""
    import logging

    logging.getLogger("distributed").setLevel(logging.ERROR)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # pragma: no cover - not the main thread: leave the signal alone
        pass


def parse_dask_address(spec: str) -> str:
    """'dask://HOST:PORT' -> 'tcp://HOST:PORT' with PORT a whole number from 1 to 65535; ValueError otherwise."""
    where = spec[len("dask://"):]
    host, sep, port = where.rpartition(":")
    form = f"executor {spec!r}: give the scheduler as dask://HOST:PORT, e.g. dask://127.0.0.1:8786"
    if not sep or not host.strip() or not port.strip():
        raise ValueError(form)
    try:
        number = parse_whole(port, "port")
    except ValueError:
        raise ValueError(f"{form} (the port {port!r} is not a number)") from None
    if not 1 <= number <= 65535:
        raise ValueError(f"{form} (the port {number} is not from 1 to 65535)")
    return f"tcp://{host.strip()}:{number}"


def open_executor(spec: str, jobs: int) -> InProcess | ProcessPool | DaskExecutor:
    """The executor a spec names (see the module docstring); close() it when done. ValueError for a bad spec."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if spec == "process":
        return InProcess() if jobs == 1 else ProcessPool(jobs)
    if spec == "dask":
        return DaskExecutor(jobs)
    if spec.startswith("dask://"):
        return DaskExecutor(jobs, parse_dask_address(spec))
    raise ValueError(f"unknown executor {spec!r}: use process, dask or dask://HOST:PORT")
