"""The ``multiprocessing.Queue`` baseline's worker: it serves until told to stop, and never outlives its benchmark."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import psutil
from waiting import PROCESS_WAIT_S, wait_until

from inspector.loader import FileStorage

# A benchmark process that starts a queue worker, has one payload loaded through it, prints the worker's pid and
# dies without sending the stop (as a benchmark killed mid-run would).
_ORPHANING = textwrap.dedent("""
    import multiprocessing, os, sys
    from inspector.loader.bench.peers import queue_worker
    ctx = multiprocessing.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    worker = ctx.Process(target=queue_worker, args=([sys.argv[1]], tasks, results, os.getpid()), daemon=True)
    worker.start()
    tasks.put(0)
    assert results.get(timeout=120)["a"].tolist() == [0, 1, 2]
    print(worker.pid, flush=True)
    os._exit(0)
""")


def test_a_queue_worker_whose_benchmark_died_without_stopping_it_exits_on_its_own(tmp_path: Path) -> None:
    path = str(tmp_path / "p.istore")
    FileStorage(path).save({"a": np.arange(3)})
    done = subprocess.run(
        [sys.executable, "-c", _ORPHANING, path], capture_output=True, text=True, timeout=PROCESS_WAIT_S
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[-1])
    try:
        wait_until(lambda: _gone(pid), PROCESS_WAIT_S, what="the orphaned queue worker to exit")
    finally:
        if not _gone(pid):
            psutil.Process(pid).kill()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # exited; its new parent has not reaped it yet
    except psutil.NoSuchProcess:
        return True
