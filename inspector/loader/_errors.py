"""The loader's exceptions: one root, ``LoaderError``; each also subclasses the builtin it would otherwise be.

Standard library only: the worker process imports this module.
"""

from __future__ import annotations

from inspector.errors import InspectorError


class LoaderError(InspectorError):
    """Anything the loader raises on purpose: ``except LoaderError`` catches every loader failure."""


class UnsupportedPayloadError(LoaderError, TypeError):
    """``save`` met a value the storage format cannot hold without pickle.

    ``key_path`` is where it sits as a tuple of keys and indices (``('obs', 3)``); ``where`` is the
    same place written as Python (``obj['obs'][3]``).
    """

    def __init__(
        self, where: str, type_name: str, reason: str, supported: tuple[str, ...], key_path: tuple[object, ...] = ()
    ) -> None:
        self.where = where
        self.key_path = key_path
        self.type_name = type_name
        self.reason = reason
        self.supported = supported
        super().__init__(
            f"Cannot store {where}: {reason}\n"
            f"type = {type_name}\n"
            f"supported = {', '.join(supported)}\n"
            "next step = convert the value to one of the supported types (or drop it) before save()"
        )


class StorageNotFoundError(LoaderError, FileNotFoundError):
    """The storage file is gone: never written, expired after ``ttl``, or removed at shutdown."""

    def __init__(self, path: str, why: str | None = None) -> None:
        self.path = path
        self.why = why
        self.expired = why is not None
        headline = f"Storage file {path!r} does not exist"
        detail = f"\nreason = {why}" if why else ""
        hint = (
            "raise ttl or load sooner"
            if why and "ttl" in why
            else "check the path, or save() again with the loader that will load it"
        )
        super().__init__(2, f"{headline}{detail}\nnext step = {hint}")
        self.filename = path

    def __str__(self) -> str:
        return str(self.strerror)


class StorageCorruptError(LoaderError, ValueError):
    """The file is not a complete, well-formed storage file (truncated, garbled, or foreign)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"Storage file {path!r} is corrupt or not a storage file: {reason}\n"
            "next step = save the object again; files are only ever read as raw arrays, never unpickled"
        )


class WorkerDiedError(LoaderError, RuntimeError):
    """The worker process serving a request died before it finished."""

    def __init__(self, worker: str, pid: int | None, exitcode: int | None, path: str) -> None:
        self.worker = worker
        self.pid = pid
        self.exitcode = exitcode
        self.path = path
        how = f"killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
        super().__init__(
            f"Loader {worker} died while loading {path!r} ({how})\n"
            f"pid = {pid}\n"
            "next step = load again: the pool has started a replacement worker"
        )


class LoaderShutdownError(LoaderError, RuntimeError):
    """A request was still pending when the loader shut down."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"The loader shut down before {path!r} was loaded\n"
            "next step = load again (the loader restarts on demand) or give shutdown() a longer timeout"
        )


class SharedMemoryError(LoaderError, OSError):
    """Reserving a shared-memory segment failed (out of memory, or a limit was hit)."""

    def __init__(self, nbytes: int, cause: OSError) -> None:
        self.nbytes = nbytes
        super().__init__(
            cause.errno,
            f"Could not reserve {nbytes / 2**20:.1f} MiB of shared memory: {cause.strerror}\n"
            "next step = free memory, load smaller payloads, or use fewer workers",
        )

    def __str__(self) -> str:
        return str(self.strerror)


class CudaUnavailableError(LoaderError, RuntimeError):
    """``device='cuda'`` was asked for on a machine where torch sees no CUDA GPU."""

    def __init__(self, device: str, reason: str) -> None:
        self.device = device
        self.reason = reason
        super().__init__(
            f"device={device!r} needs a CUDA GPU: {reason}\n"
            "next step = load with device=None (arrays stay in host memory) or run on a GPU machine"
        )


class WorkersNotReadyError(LoaderError, TimeoutError):
    """``start(timeout)`` ran out of time before every worker said it was ready."""

    def __init__(self, loader: str, timeout: float) -> None:
        self.loader = loader
        self.timeout = timeout
        super().__init__(
            f"{loader}: workers not ready after {timeout} s\n"
            "next step = call start() with a longer timeout on a busy machine, or read the workers' stderr "
            "if they keep failing to start"
        )


class WorkerStartError(LoaderError, RuntimeError):
    """Worker processes keep exiting before they are ready, so the pool stopped replacing them."""

    def __init__(self, failures: int, exitcode: int | None, command: str) -> None:
        self.failures = failures
        self.exitcode = exitcode
        self.command = command
        super().__init__(
            f"Loader workers exit before they start ({failures} times in a row)\n"
            f"last exit code = {exitcode}\n"
            f"command = {command}\n"
            "next step = read the worker's stderr (it usually says why the worker module could not be "
            "imported), fix that, then shutdown() and load again"
        )


class WorkerSpawnError(LoaderError, OSError):
    """The operating system refused to start a worker process (too many open files, processes or no memory)."""

    def __init__(self, index: int, cause: OSError) -> None:
        self.index = index
        super().__init__(
            cause.errno,
            f"Could not start loader worker {index}: {cause.strerror or cause}\n"
            "next step = free resources (raise `ulimit -n` / `ulimit -u`, close other loaders, free memory) "
            "or use fewer workers, then load again",
        )

    def __str__(self) -> str:
        return str(self.strerror)


class CallbackDeadlockError(LoaderError, RuntimeError):
    """A callback (or done-callback) waited on a load whose own callback can only run after it returns (on the same
    thread): through ``result``, ``exception``, ``concurrent.futures.wait`` or ``as_completed``."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"A loader callback waited on the load of {path!r}, whose callback runs on the same delivery "
            "thread after this one returns: that wait could never end\n"
            "next step = wait outside the callback; or load it without a callback (such loads complete without "
            "the delivery thread, so waiting on them works); or, instead of waiting, chain: "
            "future.add_done_callback(fn) runs fn on the delivery thread once that load is done (fn must not wait "
            "on such a load either)"
        )


class LoadForkedError(LoaderError, RuntimeError):
    """In a child made by ``os.fork()``: a load the parent started before the fork, which only the parent can finish."""

    def __init__(self, path: str, parent_pid: int) -> None:
        self.path = path
        self.parent_pid = parent_pid
        super().__init__(
            f"The load of {path!r} was started by the parent process (pid {parent_pid}) before this process "
            "forked; it completes in the parent only\n"
            "next step = load it again in this process (a load here starts this process's own workers), or wait "
            "for it in the parent"
        )


class LoaderCrashedError(LoaderError, RuntimeError):
    """The loader's I/O thread failed, so the requests it held could not be served."""

    def __init__(self, cause: BaseException, path: str | None = None) -> None:
        self.cause = cause
        self.path = path
        self.__cause__ = cause  # tracebacks show where the I/O thread failed
        what = f" before {path!r} was loaded" if path is not None else ""
        first_line = (str(cause).splitlines() or [""])[0]
        super().__init__(
            f"The loader's I/O thread crashed{what}\n"
            f"cause = {type(cause).__name__}: {first_line}\n"
            "next step = load again: the loader starts a fresh pool of workers "
            "(if it keeps failing, fix the cause first; the log has the traceback)"
        )
