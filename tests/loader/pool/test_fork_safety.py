"""Forking while a loader is busy: the child never hangs, fails what it inherited at once, and sees stable data."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from waiting import PROCESS_WAIT_S

PRELUDE = """
import gc, json, os, signal, sys, threading, time
sys.path[:0] = {path!r}
import numpy as np
from inspector.loader import FileStorageLoader, LoadForkedError
"""

STRESS = """
loader = FileStorageLoader(ttl=None, worker_num=2)
storage = loader.save({"a": np.arange(100)})
loader.load(storage).result(60)
stop = threading.Event()

def churn():  # keeps the caller, I/O and delivery threads busy (and their locks taken) while we fork
    while not stop.is_set():
        futures = [loader.load(storage, (lambda obj: None) if i % 2 else None) for i in range(16)]
        for future in futures:
            future.result(60)

threading.Thread(target=churn, daemon=True).start()
hung = exited = 0
for i in range(FORKS):
    child = os.fork()
    if child == 0:
        if i % 2:
            os._exit(0)
        sys.exit(0)  # a normal exit: the exit hook and finalizers run in the child too
    deadline = time.monotonic() + CHILD_WAIT_S  # a child that is not gone by then hangs: it never would be
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            exited += os.waitstatus_to_exitcode(status) == 0
            break
        if time.monotonic() > deadline:
            hung += 1
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            break
        time.sleep(0.002)
stop.set()
after = int(loader.load(storage).result(60)["a"].sum())
loader.shutdown()
print(json.dumps({"hung": hung, "exited": exited, "after": after}), flush=True)
"""


def run_script(tmp_path: Path, body: str, **values: object) -> dict:
    script = tmp_path / "script.py"
    head = textwrap.dedent(PRELUDE).format(path=sys.path)
    assignments = "".join(f"{name} = {value!r}\n" for name, value in values.items())
    script.write_text(head + assignments + textwrap.dedent(body))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=PROCESS_WAIT_S * 3)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.slow
def test_children_forked_while_a_loader_is_busy_all_exit(tmp_path: Path) -> None:
    forks = 200
    info = run_script(tmp_path, STRESS, FORKS=forks, CHILD_WAIT_S=20.0)
    assert info == {"hung": 0, "exited": forks, "after": 4950}


PENDING = """
loader = FileStorageLoader(ttl=None, worker_num=1)
storage = loader.save({"a": np.arange(4)})
release = threading.Event()
pending = loader.load(storage, lambda obj: release.wait(60))  # answered only after its callback returns
done_calls = []
pending.add_done_callback(lambda f: done_calls.append(type(f.exception()).__name__))
read, write = os.pipe()
child = os.fork()
if child == 0:
    started = time.monotonic()
    try:
        pending.result(30)
        outcome = "completed"
    except LoadForkedError as exc:
        outcome = "forked" if exc.parent_pid == os.getppid() and storage.path in str(exc) else "wrong details"
    except BaseException as exc:
        outcome = type(exc).__name__
    fresh = int(loader.load(storage).result(30)["a"].sum())  # the child's own workers serve it
    report = {"outcome": outcome, "at_once": time.monotonic() - started < 10, "done_calls": done_calls,
              "fresh": fresh}
    os.write(write, json.dumps(report).encode())
    loader.shutdown()
    os._exit(0)
os.close(write)
os.waitpid(child, 0)
report = json.loads(os.read(read, 4096))
release.set()
report["parent"] = int(pending.result(60)["a"].sum())
loader.shutdown()
print(json.dumps(report), flush=True)
"""


@pytest.mark.slow
def test_a_load_pending_at_fork_fails_at_once_in_the_child_and_completes_in_the_parent(tmp_path: Path) -> None:
    info = run_script(tmp_path, PENDING)
    assert info == {"outcome": "forked", "at_once": True, "done_calls": ["LoadForkedError"], "fresh": 6, "parent": 6}


ALIAS = """
loader = FileStorageLoader(ttl=None, worker_num=1)
ones, twos = loader.save({"a": np.full(1000, 1.0)}), loader.save({"a": np.full(1000, 2.0)})
kept = loader.load(ones).result(60)
read, write = os.pipe()
child = os.fork()
if child == 0:
    os.close(write)
    os.read(read, 1)  # the parent has dropped its copy and loaded other data since
    os._exit(0 if set(kept["a"].tolist()) == {1.0} else 3)
os.close(read)
del kept
gc.collect()
later = [loader.load(twos).result(60) for _ in range(4)]  # one worker: it would reuse the freed segment
os.write(write, b"x")
_, status = os.waitpid(child, 0)
parent_ok = all(set(obj["a"].tolist()) == {2.0} for obj in later)
reused = loader.load(twos).result(60)  # segments leased after the fork are recycled as usual
del later, reused
loader.shutdown()
print(json.dumps({"child": os.waitstatus_to_exitcode(status), "parent_ok": parent_ok}), flush=True)
"""


@pytest.mark.slow
def test_arrays_a_child_inherited_keep_their_values_after_the_parent_loads_again(tmp_path: Path) -> None:
    assert run_script(tmp_path, ALIAS) == {"child": 0, "parent_ok": True}
