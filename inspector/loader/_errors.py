"""The loader's exceptions: one root, ``LoaderError``; each also subclasses the builtin it would otherwise be.

Standard library only: the worker process imports this module.
"""

from __future__ import annotations

from inspector._messages import Message
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
        message = Message(
            f"Cannot store {where}: {reason}",
            {"type": type_name, "supported": ", ".join(supported)},
            next_step="convert the value to one of the supported types (or drop it) before save()",
        )
        super().__init__(message)


class StorageNotFoundError(LoaderError, FileNotFoundError):
    """The storage file is gone: never written, expired after ``ttl``, or removed at shutdown."""

    def __init__(self, path: str, why: str | None = None) -> None:
        self.path = path
        self.why = why
        self.expired = why is not None
        hint = (
            "raise ttl or load sooner"
            if why and "ttl" in why
            else "check the path, or save() again with the loader that will load it"
        )
        super().__init__(2, Message(f"Storage file {path!r} does not exist", {"reason": why}, next_step=hint))
        self.filename = path

    def __str__(self) -> str:
        return str(self.strerror)


class StorageCorruptError(LoaderError, ValueError):
    """The file is not a complete, well-formed storage file (truncated, garbled, or foreign)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        message = Message(
            f"Storage file {path!r} is corrupt or not a storage file: {reason}",
            next_step="save the object again; files are only ever read as raw arrays, never unpickled",
        )
        super().__init__(message)


class WorkerDiedError(LoaderError, RuntimeError):
    """The worker process serving a request died before it finished."""

    def __init__(self, worker: str, pid: int | None, exitcode: int | None, path: str) -> None:
        self.worker = worker
        self.pid = pid
        self.exitcode = exitcode
        self.path = path
        how = f"killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
        message = Message(
            f"Loader {worker} died while loading {path!r} ({how})",
            [("pid", str(pid))],
            next_step="load again: the pool has started a replacement worker",
        )
        super().__init__(message)


class LoaderShutdownError(LoaderError, RuntimeError):
    """A request was still pending when the loader shut down."""

    def __init__(self, path: str) -> None:
        self.path = path
        message = Message(
            f"The loader shut down before {path!r} was loaded",
            next_step="load again (the loader restarts on demand) or give shutdown() a longer timeout",
        )
        super().__init__(message)


class SharedMemoryError(LoaderError, OSError):
    """Reserving a shared-memory segment failed (out of memory, or a limit was hit)."""

    def __init__(self, nbytes: int, cause: OSError) -> None:
        self.nbytes = nbytes
        message = Message(
            f"Could not reserve {nbytes / 2**20:.1f} MiB of shared memory: {cause.strerror}",
            next_step="free memory, load smaller payloads, or use fewer workers",
        )
        super().__init__(cause.errno, message)

    def __str__(self) -> str:
        return str(self.strerror)


class CudaUnavailableError(LoaderError, RuntimeError):
    """``device='cuda'`` was asked for on a machine where torch sees no CUDA GPU."""

    def __init__(self, device: str, reason: str) -> None:
        self.device = device
        self.reason = reason
        message = Message(
            f"device={device!r} needs a CUDA GPU: {reason}",
            next_step="load with device=None (arrays stay in host memory) or run on a GPU machine",
        )
        super().__init__(message)


class WorkersNotReadyError(LoaderError, TimeoutError):
    """``start(timeout)`` ran out of time before every worker said it was ready."""

    def __init__(self, loader: str, timeout: float) -> None:
        self.loader = loader
        self.timeout = timeout
        message = Message(
            f"{loader}: workers not ready after {timeout} s",
            next_step="call start() with a longer timeout on a busy machine, or read the workers' stderr "
            "if they keep failing to start",
        )
        super().__init__(message)


class WorkerStartError(LoaderError, RuntimeError):
    """Worker processes keep exiting before they are ready, so the pool stopped replacing them."""

    def __init__(self, failures: int, exitcode: int | None, command: str) -> None:
        self.failures = failures
        self.exitcode = exitcode
        self.command = command
        message = Message(
            f"Loader workers exit before they start ({failures} times in a row)",
            [("last exit code", str(exitcode)), ("command", command)],
            next_step="read the worker's stderr (it usually says why the worker module could not be "
            "imported), fix that, then shutdown() and load again",
        )
        super().__init__(message)


class WorkerSpawnError(LoaderError, OSError):
    """The operating system refused to start a worker process (too many open files, processes or no memory)."""

    def __init__(self, index: int, cause: OSError) -> None:
        self.index = index
        message = Message(
            f"Could not start loader worker {index}: {cause.strerror or cause}",
            next_step="free resources (raise `ulimit -n` / `ulimit -u`, close other loaders, free memory) "
            "or use fewer workers, then load again",
        )
        super().__init__(cause.errno, message)

    def __str__(self) -> str:
        return str(self.strerror)


class CallbackDeadlockError(LoaderError, RuntimeError):
    """A callback (or done-callback) waited on a load whose own callback can only run after it returns (on the same
    thread): through ``result``, ``exception``, ``concurrent.futures.wait`` or ``as_completed``."""

    def __init__(self, path: str) -> None:
        self.path = path
        message = Message(
            f"A loader callback waited on the load of {path!r}, whose callback runs on the same delivery "
            "thread after this one returns: that wait could never end",
            next_step="wait outside the callback; or load it without a callback (such loads complete without "
            "the delivery thread, so waiting on them works); or, instead of waiting, chain: "
            "future.add_done_callback(fn) runs fn on the delivery thread once that load is done (fn must not wait "
            "on such a load either)",
        )
        super().__init__(message)


class LoadForkedError(LoaderError, RuntimeError):
    """In a child made by ``os.fork()``: a load the parent started before the fork, which only the parent can finish."""

    def __init__(self, path: str, parent_pid: int) -> None:
        self.path = path
        self.parent_pid = parent_pid
        message = Message(
            f"The load of {path!r} was started by the parent process (pid {parent_pid}) before this process "
            "forked; it completes in the parent only",
            next_step="load it again in this process (a load here starts this process's own workers), or wait "
            "for it in the parent",
        )
        super().__init__(message)


class LoaderCrashedError(LoaderError, RuntimeError):
    """The loader's I/O thread failed, so the requests it held could not be served."""

    def __init__(self, cause: BaseException, path: str | None = None) -> None:
        self.cause = cause
        self.path = path
        self.__cause__ = cause  # tracebacks show where the I/O thread failed
        what = f" before {path!r} was loaded" if path is not None else ""
        first_line = (str(cause).splitlines() or [""])[0]
        message = Message(
            f"The loader's I/O thread crashed{what}",
            [("cause", f"{type(cause).__name__}: {first_line}")],
            next_step="load again: the loader starts a fresh pool of workers "
            "(if it keeps failing, fix the cause first; the log has the traceback)",
        )
        super().__init__(message)
