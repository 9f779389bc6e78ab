"""The public loaders: save synchronously, load asynchronously through worker processes."""

from __future__ import annotations

import collections
import itertools
import os
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from inspector._messages import Message
from inspector.loader._errors import WorkersNotReadyError
from inspector.loader._file_area import FileArea, check_ttl
from inspector.loader._lifecycle import Core
from inspector.loader.pool.config import INLINE_BYTES, no_reason
from inspector.loader.pool.cuda import resolve_device
from inspector.loader.pool.records import LoaderStatus, LoadTiming
from inspector.loader.pool.requests import Request
from inspector.loader.storage.encode import encode
from inspector.loader.storage.handles import FileStorage, Storage, write_atomic

_request_ids = itertools.count(1)


class StorageLoader(ABC):
    """Saves payloads synchronously and loads them in a pool of ``worker_num`` worker processes.

    Array bytes travel only through shared memory (see NOTE [ Segment ownership ]); workers
    start on the first ``load`` (or ``start()``), stop at ``shutdown()``, and start again on the
    next ``load``. Workers are fresh interpreters running a module of this package, so no
    ``if __name__ == "__main__":`` guard is needed anywhere (NOTE [ Starting workers ]). Use it
    as a context manager to be sure it shuts down.
    """

    def __init__(
        self,
        worker_num: int = 3,
        *,
        inline_bytes: int = INLINE_BYTES,
        _why_missing: Callable[[str], str | None] = no_reason,
    ) -> None:
        self._core = Core(type(self).__name__, worker_num, _why_missing, inline_bytes)
        self._finalizer = weakref.finalize(self, self._core.close_when_idle)
        self._finalizer.atexit = False

    @property
    def name(self) -> str:
        return self._core.name

    @property
    def worker_num(self) -> int:
        return self._core.worker_num

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
        """Load ``storage`` in a worker (small and cached: on this thread); ``callback(obj)`` runs on the delivery
        thread.

        The returned future completes after the callback has returned, with the object, or with
        the error (which also goes to ``on_error``): a missing, expired, truncated or corrupt
        file, or a worker that died. Delivered arrays are yours to keep (NOTE [ Segment
        ownership ]). ``device='cuda'`` delivers tensors on the GPU (NOTE [ CUDA delivery ]).
        A callback may wait on another load's future only if that load has no callback
        (NOTE [ Callbacks that wait ]).

        >>> obj = loader.load(loader.save({"obs": np.ones(3)})).result()  # doctest: +SKIP
        """
        if not isinstance(storage, Storage):
            headline = f"load() needs a Storage, got {type(storage).__name__}"
            raise TypeError(str(Message(headline, next_step="pass what save() returned, or FileStorage(path)")))
        for what, fn in (("callback", callback), ("on_error", on_error)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{what} must be callable or None, got {type(fn).__name__}")
        resolved = None if device is None else resolve_device(device)
        path = None
        if isinstance(storage, FileStorage):  # resolved now: a later chdir must not change what loads
            path = storage.path if storage.path.startswith("/") else os.path.abspath(storage.path)
        request = Request(next(_request_ids), storage, path, callback, on_error, resolved)
        self._core.submit(request)
        return request.future

    def stream(self, storages: Iterable[Storage], *, prefetch: int | None = None, device: Any = None) -> Iterator[Any]:
        """Load ``storages`` in order and yield each object, keeping ``prefetch`` loads in flight.

        ``prefetch`` defaults to twice the number of workers. A failed load raises when its turn
        comes; loads still in flight when the iteration stops are cancelled or left to finish.

        >>> for batch in loader.stream(storages):  # doctest: +SKIP
        ...     train_step(batch)
        """
        depth = 2 * self.worker_num if prefetch is None else prefetch
        if type(depth) is not int or depth < 1:
            raise ValueError(f"prefetch must be a positive int, got {prefetch!r}")
        upcoming = iter(storages)
        in_flight: collections.deque[Future[Any]] = collections.deque()
        try:
            for storage in itertools.islice(upcoming, depth):
                in_flight.append(self.load(storage, device=device))
            while in_flight:
                future = in_flight.popleft()
                following = next(upcoming, None)
                if following is not None:
                    in_flight.append(self.load(following, device=device))
                yield future.result()
                del future
        finally:
            for future in in_flight:
                future.cancel()

    def start(self, timeout: float = 60.0) -> LoaderStatus:
        """Start the workers now and wait until they are ready (``load`` would start them anyway)."""
        if not self._core.pool().wait_ready(timeout):
            raise WorkersNotReadyError(self.name, timeout)
        return self.status()

    def shutdown(self, timeout: float | None = None) -> None:
        """Finish submitted loads (up to ``timeout`` s), stop every worker, release shared memory."""
        self._core.shutdown(timeout)

    def status(self) -> LoaderStatus:
        """A snapshot of the workers, requests and shared-memory segments."""
        return self._core.status()

    def timings(self) -> tuple[LoadTiming, ...]:
        """Per-stage timings of the most recent loads (oldest first)."""
        return tuple(LoadTiming.from_marks(*marks) for marks in list(self._core.timings))

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
        return f"<{self.name} {state}, worker_num={self.worker_num}>"


class FileStorageLoader(StorageLoader):
    """Saves each payload as one storage file in ``dirname`` and deletes files ``ttl`` s after saving.

    With ``dirname=None`` the loader makes a private (0700) temporary directory on first save
    and removes it, with its files, at ``shutdown``; a given directory is made absolute now (a
    later ``chdir`` changes nothing), created (0700) if missing, and its files are kept at
    shutdown. ``ttl`` is a finite positive number of seconds; ``ttl=None`` keeps files until then.
    A payload of at most ``inline_bytes`` that the page cache holds is read on the calling thread,
    skipping the workers (NOTE [ Small loads in the caller ]); ``inline_bytes=0`` sends every load to
    a worker.

    >>> with FileStorageLoader(worker_num=2) as loader:  # doctest: +SKIP
    ...     obj = loader.load(loader.save({"obs": np.zeros((4, 84, 84))})).result()
    """

    def __init__(
        self,
        dirname: str | os.PathLike[str] | None = None,
        ttl: float | None = 20,
        worker_num: int = 3,
        *,
        inline_bytes: int = INLINE_BYTES,
    ) -> None:
        area = FileArea(dirname, check_ttl(ttl))
        super().__init__(worker_num, inline_bytes=inline_bytes, _why_missing=area.janitor.why_missing)
        self._area = area
        self._core.closers.append(area.close)
        self._core.forkers.append(area.after_fork_in_child)

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
        area, ticket = self._area, object()
        try:
            path = area.begin_save(ticket)
            write_atomic(path, encoded)
            area.janitor.track(path)
        finally:
            area.saves.discard(ticket)  # first, and inline: see FileArea
        return FileStorage(path)
