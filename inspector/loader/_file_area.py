"""Storage files on disk: the loader's directory and the thread that deletes files past their ttl."""

from __future__ import annotations

import collections
import contextlib
import math
import numbers
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator

from inspector.loader.storage.layout import SUFFIX

_GONE_KEPT = 10_000  # how many deleted paths we remember, to say *why* a load found nothing
_LONGEST_WAIT_S = 3600.0  # the ttl thread wakes at least this often (a long wait must not overflow)


def check_ttl(ttl: object) -> float | None:
    """``ttl`` as seconds: a finite positive real number (numpy's included, booleans not), or None (keep files
    until shutdown)."""
    if ttl is None:
        return None
    try:
        seconds = float(ttl) if isinstance(ttl, numbers.Real) and not isinstance(ttl, bool) else math.nan
    except OverflowError:  # an int too large for a float: not finite either
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(
            f"ttl must be a finite positive number of seconds, or None to keep files until shutdown; got {ttl!r}"
        )
    return seconds


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

    def after_fork_in_child(self) -> None:
        """The thread did not survive the fork, and the files it tracks are the parent's to delete."""
        self._cv = threading.Condition()
        self._due.clear()
        self._thread = None

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._stop and (not self._due or self._due[0][0] > time.monotonic()):
                    left = self._due[0][0] - time.monotonic() if self._due else _LONGEST_WAIT_S
                    self._cv.wait(min(left, _LONGEST_WAIT_S))
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
    """Where a loader writes: the given directory (made absolute now), or a private one it makes and removes.

    A private (0700) directory is made on the first save and removed, with its files, by ``close``;
    ``close`` waits for saves in progress, so a save racing a shutdown never leaves a directory
    behind (a save that starts after ``close`` makes a new one, removed at the next ``close``).
    Only the process that made a private directory removes it (NOTE [ Loaders across fork ]).
    """

    def __init__(self, dirname: str | os.PathLike[str] | None, ttl: float | None) -> None:
        self.private = dirname is None
        self._dir = None if dirname is None else os.path.abspath(os.fspath(dirname))
        self.janitor = Janitor(ttl)
        self._cv = threading.Condition()
        self._saving = 0
        self._closing = False

    @property
    def dirname(self) -> str | None:
        return self._dir

    @contextlib.contextmanager
    def new_path(self) -> Iterator[str]:
        """A fresh path to save into; the directory stays until the ``with`` block ends."""
        with self._cv:
            while self._closing:
                self._cv.wait()
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="inspector-loader-")  # mode 0700
            elif not self.private and not os.path.isdir(self._dir):
                os.makedirs(self._dir, mode=0o700, exist_ok=True)
            self._saving += 1
            path = os.path.join(self._dir, uuid.uuid4().hex + SUFFIX)
        try:
            yield path
        finally:
            with self._cv:
                self._saving -= 1
                self._cv.notify_all()

    def close(self) -> None:
        """Stop the ttl thread; a private directory goes away with everything in it (after saves in progress)."""
        self.janitor.stop()
        with self._cv:
            if not self.private or self._dir is None:
                return
            self._closing = True
            while self._saving:
                self._cv.wait()
            directory, self._dir = self._dir, None
        try:
            for name in os.listdir(directory) if os.path.isdir(directory) else ():
                self.janitor.note_gone(os.path.join(directory, name), "removed at shutdown with the private directory")
            shutil.rmtree(directory, ignore_errors=True)
        finally:
            with self._cv:
                self._closing = False
                self._cv.notify_all()

    def after_fork_in_child(self) -> None:
        """See NOTE [ Loaders across fork ]: the parent's private directory is the parent's to remove."""
        self._cv = threading.Condition()
        self._saving = 0
        self._closing = False
        if self.private:
            self._dir = None
        self.janitor.after_fork_in_child()
