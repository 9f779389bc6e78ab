"""One ``LocalWorld`` worker process: start RPC, report, then serve the parent's commands.

The process is started as ``python -c "from inspector.rpc._worker import main; main()"`` with
one end of a socket pair (fd in ``INSPECTOR_RPC_FD``), so nothing from the parent's
``__main__`` is re-imported (works from Jupyter and from scripts without a main guard), and the
RPC targets below live in an importable module, so every peer can unpickle them. The loop
polls every ``POLL_INTERVAL_S`` and exits when the parent's end closes; a watcher thread exits
the process when the parent dies, even while it is blocked in rendezvous (see NOTE [ LocalWorld
lifecycle ] in ``_world``).
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

POLL_INTERVAL_S = 0.2


def noop() -> None:
    """The RPC whose round trip is measured."""


def receive(tensor: Any) -> int:
    """The RPC that receives a tensor and answers with its size only."""
    return int(tensor.numel())


def _timed_calls(target: str, count: int, warmup: int, fn: Any, args: tuple[Any, ...] = ()) -> list[float]:
    import torch.distributed.rpc as rpc

    for _ in range(warmup):
        rpc.rpc_sync(target, fn, args=args)
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        rpc.rpc_sync(target, fn, args=args)
        samples.append(time.perf_counter() - start)
    return samples


def _options(config: dict[str, Any]) -> Any:
    import torch

    from inspector.rpc._registry import construct_rpc_backend_options

    torch.set_num_threads(1)
    return construct_rpc_backend_options(
        config["backend"],
        rpc_timeout=config["rpc_timeout"],
        num_worker_threads=config["num_worker_threads"],
        device_maps=config["device_maps"],
        devices=config["devices"],
    )


def _init(config: dict[str, Any], options: Any) -> dict[str, Any]:
    """Start RPC; returns what this worker reports to the parent."""
    import torch

    from inspector.rpc._init import start_unguarded

    start = time.perf_counter()
    start_unguarded(config["name"], config["backend"], config["rank"], config["world_size"], options)
    return {
        "name": config["name"],
        "pid": os.getpid(),
        "device_count": torch.cuda.device_count(),
        "device_maps": {t: {str(k): str(v) for k, v in m.items()} for t, m in options.device_maps.items()},
        "devices": [str(d) for d in options.devices],
        "init_seconds": time.perf_counter() - start,
    }


def _serve(conn: Connection) -> None:
    import torch
    import torch.distributed.rpc as rpc

    while True:
        if not conn.poll(POLL_INTERVAL_S):
            continue
        command, *args = conn.recv()
        try:
            if command == "rtt":
                target, count, warmup = args
                conn.send(("ok", _timed_calls(target, count, warmup, noop)))
            elif command == "send":
                target, nbytes, repeats, warmup = args
                tensor = torch.zeros(max(1, nbytes // 4), dtype=torch.float32)
                conn.send(("ok", _timed_calls(target, repeats, warmup, receive, (tensor,))))
            elif command == "shutdown":
                rpc.shutdown(graceful=True)
                conn.send(("ok", None))
                return
            else:
                conn.send(("error", ("ValueError", f"unknown command {command!r}")))
        except Exception as exc:
            conn.send(("error", (type(exc).__name__, str(exc))))


def _exit_when_orphaned(parent: int) -> None:
    """Leave at once if the parent dies, even while blocked in rendezvous or an RPC."""
    while os.getppid() == parent:
        time.sleep(POLL_INTERVAL_S)
    os._exit(3)


def main() -> None:
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), name="orphan-watch", daemon=True).start()
    conn = Connection(int(os.environ["INSPECTOR_RPC_FD"]))
    stage = "configuration"
    try:
        config = conn.recv()
        stage = "options"
        options = _options(config)
        stage = "init_rpc"
        report = _init(config, options)
    except BaseException as exc:
        conn.send(("failed", (stage, type(exc).__name__, str(exc), traceback.format_exc())))
        conn.close()
        os._exit(1)  # a failed init may leave gloo threads behind; nothing here is worth a clean exit
    conn.send(("ready", report))
    try:
        _serve(conn)
    except (EOFError, OSError):  # the parent is gone: leave without a graceful shutdown
        os._exit(2)
    conn.close()
