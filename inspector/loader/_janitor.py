"""Storage files on disk: the loader's directory and the thread that deletes files past their ttl."""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
import threading
import time
import uuid

from inspector.loader._format import SUFFIX

_GONE_KEPT = 10_000  # how many deleted paths we remember, to say *why* a load found nothing


class Janitor:
    """Deletes tracked files ``ttl`` seconds after they were saved, on its own thread.

    ``track`` only appends under a short lock, so saving never waits for deletions; the
    thread sleeps until the oldest file is due instead of polling.
    """

    def __init__(self, ttl: float | None) -> None:
        self.ttl = ttl
        self._cv = threading.Condition()
        self._due: collections.deque[tuple[float, str]] = collections.deque()
        self._gone: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._thread: threading.Thread | None = None
        self._stop = False

    def track(self, path: str) -> None:
        if self.ttl is None:
            return
        with self._cv:
            self._due.append((time.monotonic() + self.ttl, path))
            if self._thread is None:
                self._stop = False
                self._thread = threading.Thread(target=self._run, name="inspector-loader-ttl", daemon=True)
                self._thread.start()
            self._cv.notify()

    def note_gone(self, path: str, reason: str) -> None:
        with self._cv:
            self._gone[path] = reason
            while len(self._gone) > _GONE_KEPT:
                self._gone.popitem(last=False)

    def why_missing(self, path: str) -> str | None:
        with self._cv:
            return self._gone.get(path)

    def pending(self) -> int:
        with self._cv:
            return len(self._due)

    def stop(self) -> None:
        with self._cv:
            thread, self._thread = self._thread, None
            self._stop = True
            self._due.clear()
            self._cv.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._stop and (not self._due or self._due[0][0] > time.monotonic()):
                    self._cv.wait(self._due[0][0] - time.monotonic() if self._due else None)
                if self._stop:
                    return
                now = time.monotonic()
                expired = []
                while self._due and self._due[0][0] <= now:
                    expired.append(self._due.popleft()[1])
            for path in expired:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    continue
                self.note_gone(path, f"expired: deleted {self.ttl} s after save (ttl={self.ttl})")


class FileArea:
    """Where a loader writes: the given directory, or a private (0700) one it makes and removes."""

    def __init__(self, dirname: str | os.PathLike[str] | None, ttl: float | None) -> None:
        self.private = dirname is None
        self._dir = None if dirname is None else os.fspath(dirname)
        self.janitor = Janitor(ttl)
        self._lock = threading.Lock()

    @property
    def dirname(self) -> str | None:
        return self._dir

    def new_path(self) -> str:
        with self._lock:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="inspector-loader-")  # mode 0700
            elif not self.private and not os.path.isdir(self._dir):
                os.makedirs(self._dir, mode=0o700, exist_ok=True)
            return os.path.join(self._dir, uuid.uuid4().hex + SUFFIX)

    def close(self) -> None:
        """Stop the ttl thread; a private directory goes away with everything in it."""
        self.janitor.stop()
        with self._lock:
            if not self.private or self._dir is None:
                return
            directory, self._dir = self._dir, None
        for name in os.listdir(directory) if os.path.isdir(directory) else ():
            self.janitor.note_gone(os.path.join(directory, name), "removed at shutdown with the private directory")
        shutil.rmtree(directory, ignore_errors=True)
