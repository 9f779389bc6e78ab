"""The public loaders: save synchronously, load asynchronously through worker processes."""

from __future__ import annotations

import itertools
import os
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from inspector.loader._codec import encode
from inspector.loader._cuda import resolve_device
from inspector.loader._delivery import Request
from inspector.loader._janitor import FileArea
from inspector.loader._lifecycle import Core
from inspector.loader._records import LoaderStatus, LoadTiming
from inspector.loader._storage import FileStorage, Storage, write_atomic

START_METHODS = ("spawn", "forkserver")
_request_ids = itertools.count(1)


def _no_reason(path: str) -> str | None:
    return None


class StorageLoader(ABC):
    """Saves payloads synchronously and loads them in a pool of ``worker_num`` worker processes.

    Array bytes travel only through shared memory (see NOTE [ Segment ownership ]); workers
    start on the first ``load`` (or ``start()``), stop at ``shutdown()``, and start again on the
    next ``load``. Use it as a context manager to be sure it shuts down.
    """

    def __init__(
        self,
        worker_num: int = 3,
        *,
        start_method: str = "spawn",
        _why_missing: Callable[[str], str | None] = _no_reason,
    ) -> None:
        if type(worker_num) is not int or worker_num < 1:
            raise ValueError(f"worker_num must be a positive int, got {worker_num!r}")
        if start_method not in START_METHODS:
            raise ValueError(
                f"start_method {start_method!r} is not supported. Supported: {list(START_METHODS)} "
                "(fork is unsafe with threads, in Jupyter and after CUDA initialisation)"
            )
        self._core = Core(type(self).__name__, worker_num, start_method, _why_missing)
        self._finalizer = weakref.finalize(self, self._core.close_when_idle)
        self._finalizer.atexit = False

    @property
    def name(self) -> str:
        return self._core.name

    @property
    def worker_num(self) -> int:
        return self._core.worker_num

    @property
    def start_method(self) -> str:
        return self._core.start_method

    @property
    def running(self) -> bool:
        """True while worker processes are up (between the first load and ``shutdown``)."""
        return self._core.running

    @abstractmethod
    def save(self, obj: Any) -> Storage:
        """Store ``obj`` synchronously and return the handle to load it with."""

    def load(
        self,
        storage: Storage,
        callback: Callable[[Any], Any] | None = None,
        *,
        on_error: Callable[[BaseException], Any] | None = None,
        device: Any = None,
    ) -> Future[Any]:
        """Load ``storage`` in a worker; ``callback(obj)`` runs on the loader's delivery thread.

        The returned future completes after the callback has returned, with the object, or with
        the error (which also goes to ``on_error``): a missing, expired, truncated or corrupt
        file, or a worker that died. Delivered arrays are yours to keep (NOTE [ Segment
        ownership ]). ``device='cuda'`` delivers tensors on the GPU (NOTE [ CUDA delivery ]).
        """
        if not isinstance(storage, Storage):
            raise TypeError(
                f"load() needs a Storage, got {type(storage).__name__}\n"
                "next step = pass what save() returned, or FileStorage(path)"
            )
        for what, fn in (("callback", callback), ("on_error", on_error)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{what} must be callable or None, got {type(fn).__name__}")
        resolved = resolve_device(device)
        path = os.path.abspath(storage.path) if isinstance(storage, FileStorage) else None
        request = Request(next(_request_ids), storage, path, callback, on_error, resolved)
        self._core.submit(request)
        return request.future

    def start(self, timeout: float = 60.0) -> LoaderStatus:
        """Start the workers now and wait until they are ready (``load`` would start them anyway)."""
        if not self._core.pool().wait_ready(timeout):
            raise TimeoutError(f"{self.name}: workers not ready after {timeout} s")
        return self.status()

    def shutdown(self, timeout: float | None = None) -> None:
        """Finish submitted loads (up to ``timeout`` s), stop every worker, release shared memory."""
        self._core.shutdown(timeout)

    def status(self) -> LoaderStatus:
        """A snapshot of the workers, requests and shared-memory segments."""
        return self._core.status()

    def timings(self) -> tuple[LoadTiming, ...]:
        """Per-stage timings of the most recent loads (oldest first)."""
        return tuple(self._core.timings)

    def clear_timings(self) -> None:
        self._core.timings.clear()

    def __enter__(self) -> StorageLoader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<{self.name} {state}, worker_num={self.worker_num}, start_method={self.start_method!r}>"


class FileStorageLoader(StorageLoader):
    """Saves each payload as one storage file in ``dirname`` and deletes files ``ttl`` s after saving.

    With ``dirname=None`` the loader makes a private (0700) temporary directory on first save
    and removes it, with its files, at ``shutdown``; a given directory is created (0700) if
    missing and its files are kept at shutdown. ``ttl=None`` keeps files until then.
    """

    def __init__(
        self,
        dirname: str | os.PathLike[str] | None = None,
        ttl: float | None = 20,
        worker_num: int = 3,
        *,
        start_method: str = "spawn",
    ) -> None:
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0):
            raise ValueError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        area = FileArea(dirname, ttl)
        super().__init__(worker_num, start_method=start_method, _why_missing=area.janitor.why_missing)
        self._area = area
        self._core.closers.append(area.close)

    @property
    def dirname(self) -> str | None:
        """The directory files go to (None until the first save when it is private)."""
        return self._area.dirname

    @property
    def ttl(self) -> float | None:
        return self._area.janitor.ttl

    def save(self, obj: Any) -> FileStorage:
        """Write ``obj`` to a new file atomically (mode 0600); unsupported values raise first."""
        encoded = encode(obj)
        path = self._area.new_path()
        write_atomic(path, encoded)
        self._area.janitor.track(path)
        return FileStorage(path)
