"""``LocalWorld``'s worker processes: their environment, spawning, and stopping within a bound.

Every wait here is bounded (NOTE [ LocalWorld lifecycle ] in ``_world``): a process that does
not exit within ``KILL_WAIT_S`` is killed, and even the wait after the kill has that bound.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import IO, Any

from inspector._child_python import child_command, module_main
from inspector._processes import stop_processes, wait_or_kill
from inspector.rpc._records import WorkerFailure

KILL_WAIT_S = 3.0
WORKER_CODE = module_main("inspector.rpc._worker")


@dataclass
class WorkerProcess:
    """One running worker: its process, our end of its pipe, and its captured stderr."""

    rank: int
    name: str
    popen: subprocess.Popen[bytes]
    conn: Connection
    stderr: IO[bytes]

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            self.stderr.seek(0, os.SEEK_END)
            self.stderr.seek(max(0, self.stderr.tell() - limit))
            return self.stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _loopback_interface() -> str:
    names = [name for _, name in socket.if_nameindex()]
    return "lo" if "lo" in names or not names else next((n for n in names if n.startswith("lo")), "lo")


def world_environment() -> dict[str, str]:
    """The workers' environment: a free port on 127.0.0.1, loopback interfaces (the package is found by the
    command line: NOTE [ Child interpreters ])."""
    loopback = _loopback_interface()
    return {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "GLOO_SOCKET_IFNAME": loopback,
        "TP_SOCKET_IFNAME": loopback,
        "OMP_NUM_THREADS": "1",
    }


def spawn_worker(rank: int, name: str, env: dict[str, str], config: dict[str, Any]) -> WorkerProcess:
    """A fresh interpreter running ``WORKER_CODE`` with one end of a socket pair; ``config`` is sent at once."""
    parent_end, child_end = socket.socketpair()
    stderr = tempfile.TemporaryFile()  # noqa: SIM115  # owned by WorkerProcess, closed by close_pipes
    popen = subprocess.Popen(
        child_command(WORKER_CODE),
        env={**env, "INSPECTOR_RPC_FD": str(child_end.fileno())},
        pass_fds=[child_end.fileno()],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    child_end.close()
    conn = Connection(parent_end.detach())
    worker = WorkerProcess(rank, name, popen, conn, stderr)
    try:
        conn.send(config)
    except BaseException:  # not yet in any list that would stop it
        reap([worker])
        raise
    return worker


def stop(procs: list[WorkerProcess]) -> None:
    """Terminate, then kill, every process still running; every wait bounded by ``KILL_WAIT_S``."""
    stop_processes([proc.popen for proc in procs], KILL_WAIT_S)


def close_pipes(procs: list[WorkerProcess]) -> None:
    """Close our pipe ends and the stderr captures (idempotent)."""
    for proc in procs:
        proc.conn.close()
        proc.stderr.close()


def reap(procs: list[WorkerProcess]) -> None:
    """Stop every process and close every pipe (idempotent; also a world's finalizer)."""
    stop(procs)
    close_pipes(procs)


def silent_exit(proc: WorkerProcess, stage: str) -> WorkerFailure:
    """The failure of a worker whose pipe closed without a report; it is gone (or killed) afterwards."""
    if wait_or_kill(proc.popen, KILL_WAIT_S):
        message = f"exited with code {proc.popen.returncode} before reporting"
    else:
        message = f"closed its pipe without reporting and was still running after {KILL_WAIT_S} s; killed"
    return WorkerFailure(proc.rank, proc.name, stage, "ProcessExit", message, proc.stderr_tail())
