"""Trust, round two (limits): dead workers end the run, bounded in time, with local processes only.

A cluster left without workers ends the sweep with `WorkersLostError` after a stated timeout (instead of waiting
forever); so do a task that kills its worker and a process pool's dead worker. Ctrl-C under `--executor dask` is
one line, exit 130, and the workers are closed (they ignore the terminal's SIGINT: only the command acts on it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _square(x: int) -> int:
    return x * x


def _die(_x: int) -> int:
    os._exit(3)  # the worker process dies under the task


def test_a_cluster_without_workers_ends_the_run_after_the_stated_timeout():
    pytest.importorskip("distributed")
    from dsasim.architect.studies.executor import DaskExecutor, WorkersLostError

    executor = DaskExecutor(1, workerless_timeout_seconds=2)
    try:
        assert executor.run(_square, [(3,), (4,)]) == [9, 16]
        executor.cluster.scale(0)  # every worker gone, none restarted
        deadline = time.monotonic() + 60
        while executor.client.nthreads() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not executor.client.nthreads()
        with pytest.raises(WorkersLostError, match="no worker for 2 s; 2 of 2 tasks unfinished"):
            executor.run(_square, [(1,), (2,)])
    finally:
        executor.close()


def test_a_task_that_kills_its_workers_ends_the_run():
    pytest.importorskip("distributed")
    import dask

    from dsasim.architect.studies.executor import DaskExecutor, WorkersLostError

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):  # the first death gives up on the task
        executor = DaskExecutor(1)
    try:
        with pytest.raises(WorkersLostError, match="a task killed the Dask workers that ran it"):
            executor.run(_die, [(1,)])
    finally:
        executor.close()


def _group_members(pgid: int) -> list[int]:
    """The live processes of a process group (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_ctrl_c_under_dask_is_one_line_exit_130_and_closes_the_workers():
    pytest.importorskip("distributed")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "dsasim.cli", "sweep-sram", "--network", "resnet18", "--sizes",
                             "64KiB:1MiB:3", "--executor", "dask", "--jobs", "1"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err = bytearray()
    reader = threading.Thread(target=lambda: [err.extend(chunk) for chunk in iter(lambda: proc.stderr.read1(4096),
                                                                                    b"")], daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 240
        while b"searches" not in err and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # the progress bar shows once the cluster has started and the searches are submitted
        assert b"searches" in err, err.decode(errors="replace")
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(timeout=10)
    text = err.decode(errors="replace")
    assert proc.returncode == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert text.replace("\r", "\n").strip().splitlines()[-1] == "dsasim sweep-sram: interrupted", text
    deadline = time.monotonic() + 30
    while _group_members(proc.pid) and time.monotonic() < deadline:  # the workers were closed with it
        time.sleep(0.2)
    assert _group_members(proc.pid) == []


def test_a_pool_worker_that_dies_ends_the_run():
    from dsasim.architect.studies.executor import ProcessPool, WorkersLostError

    pool = ProcessPool(2)
    try:
        with pytest.raises(WorkersLostError, match="a worker process died"):
            pool.run(_die, [(1,), (2,)])
    finally:
        pool.close()
