"""Ctrl-C during the creation of multiprocessing semaphores is raised after it, and leaks no /dev/shm file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from waiting import PROCESS_WAIT_S

from inspector._interrupts import interrupts_deferred


def test_ctrl_c_inside_the_block_is_raised_after_it_and_the_handler_is_put_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    finished = []
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        finished.append("after the signal")
    assert finished == ["after the signal"] and signal.getsignal(signal.SIGINT) is before


def test_a_block_without_ctrl_c_raises_nothing_and_puts_the_handler_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    with interrupts_deferred():
        assert signal.getsignal(signal.SIGINT) is not before  # recording while the block runs
    assert signal.getsignal(signal.SIGINT) is before


def test_off_the_main_thread_the_block_just_runs() -> None:
    ran: list[object] = []

    def work() -> None:
        try:
            with interrupts_deferred():  # signal.signal would raise ValueError here
                ran.append("ran")
        except BaseException as exc:
            ran.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(PROCESS_WAIT_S)
    assert ran == ["ran"]


# Ctrl-C landing in the window between sem_open and the clean-up registration cannot be timed for
# real, so the child raises a real SIGINT from inside that window: the registration call.
WINDOW_SCRIPT = """
import json, multiprocessing, signal, sys
import multiprocessing.resource_tracker as tracker
names, original = [], tracker.register

def register(name, rtype):
    if rtype == "semaphore":
        names.append(name)
        signal.raise_signal(signal.SIGINT)  # a Ctrl-C after sem_open, before the clean-up knows the name
    return original(name, rtype)

tracker.register = register
ctx = multiprocessing.get_context("spawn")
outcome = "no interrupt"
try:
    {body}
except KeyboardInterrupt:
    outcome = "interrupted"
print(json.dumps({{"names": names, "outcome": outcome}}))
"""

BODIES = {
    "bare": "queue = ctx.Queue()",
    "deferred": "from inspector._interrupts import interrupts_deferred\n"
    "    with interrupts_deferred():\n"
    "        queue = ctx.Queue()",
    "mp_queue_peer": "from inspector.loader.bench.peers import BenchFiles, mp_queue_peer\n"
    "    with mp_queue_peer(BenchFiles(sys.argv[1], 'steps', 0.1, False), 1, None) as once:\n"
    "        once(1)",
}


def semaphores_left(names: list[str]) -> list[str]:
    """The semaphores of ``names`` still in /dev/shm, unlinked now so that no test leaves one behind."""
    import _multiprocessing

    left = [name for name in names if os.path.exists("/dev/shm/sem." + name.lstrip("/"))]
    for name in left:
        _multiprocessing.sem_unlink(name)
    return left


def run_window(body: str, tmp_path: Path) -> dict[str, object]:
    script = WINDOW_SCRIPT.format(body=body)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=PROCESS_WAIT_S,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="POSIX semaphores live in /dev/shm on Linux")
def test_the_window_is_real_without_the_deferral(tmp_path: Path) -> None:
    got = run_window(BODIES["bare"], tmp_path)
    assert semaphores_left(got["names"]) and got["outcome"] == "interrupted"  # type: ignore[arg-type]


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="POSIX semaphores live in /dev/shm on Linux")
@pytest.mark.parametrize("how", ["deferred", "mp_queue_peer"])
def test_ctrl_c_while_semaphores_are_made_is_raised_after_and_leaks_none(tmp_path: Path, how: str) -> None:
    got = run_window(BODIES[how], tmp_path)
    assert got["outcome"] == "interrupted" and got["names"]
    assert semaphores_left(got["names"]) == []  # type: ignore[arg-type]
