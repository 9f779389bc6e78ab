"""``LocalWorld``: real TensorPipe RPC workers on 127.0.0.1, gathered, measured and shut down in bounded time.

NOTE [ LocalWorld lifecycle ]
Start: one free port on 127.0.0.1, ``MASTER_ADDR``/``MASTER_PORT`` and the loopback interface
in ``GLOO_SOCKET_IFNAME``/``TP_SOCKET_IFNAME``; each worker is a fresh interpreter running
``inspector.rpc._worker.main`` with one end of a socket pair (no ``__main__`` re-import, so it
works from Jupyter). Workers start RPC the way torch does, without ``init_rpc``'s join guard
(NOTE [ Guarded init_rpc ]): the world supervises them itself, and what it shows of a failed
start is torch's own error on each rank. Every worker reports ``ready`` (with its name, device count, maps and
devices) or ``failed`` (stage, exception, message). All waits are bounded: the whole start by
``start_timeout``, and once one rank has failed the others get ``ERROR_GRACE_S`` to report
theirs (validation errors arrive from every rank at once; a rank that fails before rendezvous
leaves its peers waiting there forever). Then every process is stopped and the error lists
each rank; a worker that closes its pipe without reporting gets ``KILL_WAIT_S`` to exit before
it is killed. Reverse maps and device lists are derived in the parent with the same pure
functions the planner uses (gather, then check).
Commands (RTT, bandwidth) go to one worker at a time under ``_lock``, each answered within
``command_timeout``. A command that times out leaves its late answer on the way, where the
next command would read it as its own, so the world is marked broken instead: every later
command is refused with the reason and the next step (close, start a new world), and close()
skips the graceful barrier the busy worker could not join. A worker whose pipe closes
mid-command breaks the world the same way.
Close: ``_closing`` is set first, so a measurement stops before its next pair; close() waits
up to ``LOCK_WAIT_S`` for the measurement's lock, then every worker is asked for a graceful
``rpc.shutdown`` (a barrier over all of them) and waited on up to ``shutdown_timeout``. When
the lock does not come free (one long batch), close() goes straight to stopping: whatever is
left is terminated, then killed, each wait bounded by ``KILL_WAIT_S``; the measurement then
reads end-of-file and fails with "closed". A ``weakref.finalize`` does the same at garbage
collection or interpreter exit, and each worker watches its parent and exits when it dies (even
mid-rendezvous), so no worker outlives its world.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

from inspector._messages import Message
from inspector.errors import Cancelled
from inspector.rpc._device_lists import create_device_list, create_reverse_mapping
from inspector.rpc._errors import RpcError
from inspector.rpc._processes import (
    KILL_WAIT_S,
    WorkerProcess,
    close_pipes,
    reap,
    silent_exit,
    spawn_worker,
    stop,
    world_environment,
)
from inspector.rpc._records import (
    Bandwidth,
    PairLatency,
    RttMatrix,
    WorkerFailure,
    WorkerSnapshot,
    WorldSnapshot,
)

if TYPE_CHECKING:
    from inspector._bench import Progress
    from inspector.rpc._plan import TopologyPlan

START_TIMEOUT_S = 120.0
SHUTDOWN_TIMEOUT_S = 20.0
COMMAND_TIMEOUT_S = 120.0
ERROR_GRACE_S = 5.0
LOCK_WAIT_S = 5.0
BANDWIDTH_WARMUP = 1


class LocalWorldError(RpcError, RuntimeError):
    """A world that failed to start or to answer; ``.failures`` has one record per rank at fault."""

    cancelled = False

    def __init__(self, headline: str | Message, failures: Iterable[WorkerFailure] = ()) -> None:
        self.failures = tuple(failures)
        given = headline if isinstance(headline, Message) else Message(headline)
        facts = [(f.name, f"{f.stage}: {f.exception}: {f.message.partition(chr(10))[0]}") for f in self.failures]
        message = Message(given.headline, [*given.facts, *facts], notes=given.notes, next_step=given.next_step)
        super().__init__(message)


class WorldCancelled(LocalWorldError, Cancelled):
    """A world's start or measurement stopped because it was cancelled or closed meanwhile."""

    cancelled = True


class LocalWorld:
    """``n`` real RPC workers on this machine (see NOTE [ LocalWorld lifecycle ]); a context manager."""

    def __init__(
        self,
        n: int,
        device_maps: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
        devices: Mapping[str, Iterable[str]] | None = None,
        *,
        rpc_timeout: float = 30.0,
        command_timeout: float = COMMAND_TIMEOUT_S,
        names: Iterable[str] | None = None,
        backend: str = "TENSORPIPE",
        num_worker_threads: int = 8,
        start_timeout: float = START_TIMEOUT_S,
        shutdown_timeout: float = SHUTDOWN_TIMEOUT_S,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.names = tuple(names) if names is not None else tuple(f"worker{i}" for i in range(n))
        if n < 1 or len(self.names) != n:
            raise ValueError(f"A world needs n >= 1 workers and one name per worker, got n={n}, names={self.names}")
        self.device_maps = {k: {t: dict(m) for t, m in v.items()} for k, v in (device_maps or {}).items()}
        self.devices = {k: list(v) for k, v in (devices or {}).items()}
        self.rpc_timeout = rpc_timeout
        self.command_timeout = command_timeout
        self.shutdown_timeout = shutdown_timeout
        self.exit_codes: dict[str, int | None] = {}
        self.rtt: RttMatrix | None = None
        self.bandwidth: tuple[Bandwidth, ...] = ()
        self._procs: list[WorkerProcess] = []
        self._lock = threading.RLock()  # one command at a time (see NOTE [ LocalWorld lifecycle ])
        self._close_lock = threading.Lock()
        self._closing = threading.Event()
        self._closed = False
        self._broken: str | None = None
        self._finalizer = weakref.finalize(self, reap, self._procs)
        config = {
            "backend": backend,
            "rpc_timeout": rpc_timeout,
            "num_worker_threads": num_worker_threads,
            "world_size": n,
        }
        started = time.perf_counter()
        self.workers = self._start(config, start_timeout, progress, cancel)
        self.start_seconds = time.perf_counter() - started

    @classmethod
    def from_plan(cls, plan: TopologyPlan, **kwargs: Any) -> LocalWorld:
        """A world with the plan's names, maps and devices (always a static group)."""
        return cls(len(plan.workers), plan.device_maps, plan.devices, names=plan.names, **kwargs)

    def _start(
        self, config: dict[str, Any], timeout: float, progress: Progress | None, cancel: threading.Event | None
    ) -> tuple[WorkerSnapshot, ...]:
        env = world_environment()
        total = len(self.names)
        try:
            for rank, name in enumerate(self.names):
                maps, devices = self.device_maps.get(name, {}), self.devices.get(name, [])
                worker = {**config, "rank": rank, "name": name, "device_maps": maps, "devices": devices}
                self._procs.append(spawn_worker(rank, name, env, worker))
            if progress:
                progress(0, total, f"started {total} processes; waiting for init_rpc")
            reports = self._await_ready(timeout, progress, cancel)
        except BaseException:
            reap(self._procs)
            self._closed = True
            raise
        return self._gathered(reports)

    def _await_ready(
        self, timeout: float, progress: Progress | None, cancel: threading.Event | None
    ) -> dict[int, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        pending = {proc.conn: proc for proc in self._procs}
        reports: dict[int, dict[str, Any]] = {}
        failures: list[WorkerFailure] = []
        while pending and time.monotonic() < deadline:
            if cancel is not None and cancel.is_set():
                raise WorldCancelled("Cancelled while starting the world.")
            for conn in wait(list(pending), timeout=0.2):
                proc = pending.pop(conn)  # type: ignore[call-overload]
                try:
                    status, payload = proc.conn.recv()
                except (EOFError, OSError):
                    failures.append(silent_exit(proc, "start"))
                    continue
                if status == "ready":
                    reports[proc.rank] = payload
                    if progress:
                        progress(len(reports), len(self._procs), f"{proc.name} ready")
                else:
                    stage, exception, message, _trace = payload
                    failures.append(WorkerFailure(proc.rank, proc.name, stage, exception, message, proc.stderr_tail()))
            if failures:
                deadline = min(deadline, time.monotonic() + ERROR_GRACE_S)
        for proc in pending.values():
            failures.append(
                WorkerFailure(
                    proc.rank,
                    proc.name,
                    "waiting",
                    "TimeoutError",
                    "no report before the deadline; stopped",
                    proc.stderr_tail(),
                )
            )
        if failures:
            failures.sort(key=lambda f: f.rank)
            raise LocalWorldError(f"The local RPC world of {len(self._procs)} workers did not start.", failures)
        return reports

    def _gathered(self, reports: dict[int, dict[str, Any]]) -> tuple[WorkerSnapshot, ...]:
        names = list(self.names)
        maps = {reports[r]["name"]: reports[r]["device_maps"] for r in reports}
        snapshots = []
        for rank in range(len(names)):
            report = reports[rank]
            reverse = create_reverse_mapping(report["name"], names, maps)
            listed = create_device_list(report["devices"], maps[report["name"]], reverse, worker=report["name"])
            snapshots.append(
                WorkerSnapshot(
                    rank,
                    report["name"],
                    report["pid"],
                    report["device_count"],
                    report["device_maps"],
                    tuple(report["devices"]),
                    {c: {str(k): str(v) for k, v in m.items()} for c, m in reverse.items()},
                    tuple(str(d) for d in listed),
                    report["init_seconds"],
                )
            )
        return tuple(snapshots)

    def _ask(self, proc: WorkerProcess, command: tuple[Any, ...]) -> Any:
        """Send one command to one worker and return its answer (the caller holds ``_lock``)."""
        if self._closed or self._closing.is_set():
            if self._closed:
                raise LocalWorldError("This LocalWorld is closed; start a new one.")
            raise WorldCancelled("This LocalWorld is being closed; start a new one.")
        if self._broken is not None:
            message = Message(
                "This LocalWorld is broken and takes no more commands.",
                {"reason": self._broken},
                next_step="close() it (or leave its with block) and start a new LocalWorld",
            )
            raise LocalWorldError(message)
        try:
            proc.conn.send(command)
            answered = proc.conn.poll(self.command_timeout)
            reply = proc.conn.recv() if answered else None
        except (EOFError, OSError) as exc:
            if self._closing.is_set():
                raise WorldCancelled(f"This LocalWorld was closed during {command[0]!r}.") from exc
            self._broken = f"{proc.name} closed its pipe during {command[0]!r} (exit code {proc.popen.poll()})"
            failure = WorkerFailure(proc.rank, proc.name, command[0], "ProcessExit", self._broken, proc.stderr_tail())
            raise LocalWorldError(
                Message(
                    f"{proc.name} stopped answering during {command[0]!r}; this world is now broken.",
                    next_step="close() it and start a new LocalWorld (the worker's stderr is in .failures)",
                ),
                [failure],
            ) from exc
        if reply is None:
            self._broken = (
                f"{proc.name} did not answer {command[0]!r} within {self.command_timeout} s, "
                "and its late answer would be read as the next command's"
            )
            message = Message(
                f"{proc.name} did not answer {command[0]!r} within {self.command_timeout} s; this world is now broken.",
                next_step="close() it and start a new LocalWorld (with a larger command_timeout if the command is "
                "expected to take longer)",
            )
            raise LocalWorldError(message)
        status, payload = reply
        if status != "ok":
            exception, message = payload
            raise LocalWorldError(f"{proc.name} failed {command[0]!r}: {exception}: {message}")
        return payload

    def measure_rtt(self, count: int = 50, warmup: int = 5, progress: Progress | None = None) -> RttMatrix:
        """Median and p90 of ``count`` no-op ``rpc_sync`` round trips for every ordered pair (one at a time)."""
        pairs, total = [], len(self.names) ** 2
        with self._lock:
            for caller in self._procs:
                for callee in self.names:
                    samples = self._ask(caller, ("rtt", callee, count, warmup))
                    pairs.append(PairLatency.from_samples(caller.name, callee, samples))
                    if progress:
                        progress(len(pairs), total, f"{caller.name} -> {callee}")
        self.rtt = RttMatrix(self.names, tuple(pairs))
        return self.rtt

    def measure_bandwidth(
        self,
        nbytes: int = 16 << 20,
        repeats: int = 3,
        pairs: Iterable[tuple[str, str]] | None = None,
        *,
        sizes: Sequence[int] | None = None,
        warmup: int = BANDWIDTH_WARMUP,
        progress: Progress | None = None,
    ) -> tuple[Bandwidth, ...]:
        """Send float32 tensors caller -> callee: ``warmup`` untimed sends, then ``repeats`` timed ones.

        One result per pair (default: every ordered pair) and message size (``sizes``, or just
        ``nbytes``), each with the fastest, median and slowest send.
        """
        chosen = list(pairs) if pairs is not None else [(a, b) for a in self.names for b in self.names if a != b]
        measured = list(sizes) if sizes is not None else [nbytes]
        if repeats < 1 or warmup < 0 or not measured or min(measured) < 4:
            raise ValueError(
                f"Bandwidth needs repeats >= 1, warmup >= 0 and sizes of at least 4 bytes, got repeats={repeats}, "
                f"warmup={warmup}, sizes={measured}"
            )
        by_name = {proc.name: proc for proc in self._procs}
        results, total = [], len(chosen) * len(measured)
        with self._lock:
            for size in measured:
                for caller, callee in chosen:
                    samples = self._ask(by_name[caller], ("send", callee, size, repeats, warmup))
                    results.append(Bandwidth.from_samples(caller, callee, size, warmup, samples))
                    if progress:
                        progress(len(results), total, f"{caller} -> {callee}, {size / (1 << 20):g} MiB")
        self.bandwidth = tuple(results)
        return self.bandwidth

    def snapshot(self) -> WorldSnapshot:
        return WorldSnapshot(self.workers, self.start_seconds, self.rtt, self.bandwidth)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def broken(self) -> str | None:
        """Why this world takes no more commands (a command timed out or a worker vanished), or None."""
        return self._broken

    def close(self) -> None:
        """Stop a measurement in progress, shut down gracefully within ``shutdown_timeout``, stop what is left.

        Bounded even while another thread measures (see NOTE [ LocalWorld lifecycle ]).
        """
        with self._close_lock:
            if self._closed:
                return
            self._closing.set()
            owned = self._lock.acquire(timeout=LOCK_WAIT_S)
            try:
                if owned and self._broken is None:
                    self._shutdown_gracefully()
                stop(self._procs)
                if not owned:  # the measurement reads end-of-file now that its worker is gone
                    owned = self._lock.acquire(timeout=KILL_WAIT_S)
                if owned:  # else its pipes are still in use: the finalizer closes them
                    close_pipes(self._procs)
                self.exit_codes = {proc.name: proc.popen.returncode for proc in self._procs}
                self._closed = True
            finally:
                if owned:
                    self._lock.release()

    def _shutdown_gracefully(self) -> None:
        for proc in self._procs:
            with contextlib.suppress(OSError):
                proc.conn.send(("shutdown",))
        deadline = time.monotonic() + self.shutdown_timeout
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> LocalWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "broken" if self._broken else "running"
        return f"<LocalWorld {len(self.names)} workers {state}: {', '.join(self.names)}>"
