"""Storage files on disk: the loader's directory and the thread that deletes files past their ttl."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import math
import numbers
import os
import shutil
import stat
import tempfile
import threading
import time
import uuid
import warnings

from inspector._messages import Message
from inspector.loader.storage.layout import SUFFIX

_GONE_KEPT = 10_000  # how many deleted paths we remember, to say *why* a load found nothing
_LONGEST_WAIT_S = 1.0  # the ttl thread looks at its stop flag at least this often
STOP_JOIN_S = 5.0  # how long ``stop`` waits for the ttl thread (it ends within _LONGEST_WAIT_S anyway)
_POLL_S = 0.005  # how often a save waiting for a close, or a close waiting for saves, looks again
PRIVATE_PREFIX = "inspector-loader-"
OWNER_NAME = ".owner"  # locked for as long as the process that made the private directory lives
ABANDONED_AFTER_S = 60.0  # an empty private directory older than this was never given its owner
_SWEPT_AT_MOST = 64  # orphan directories removed per new private directory, so a save never waits long


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


_warned: set[str] = set()


def warn_if_others_can_replace(directory: str) -> None:
    """Warn, once per directory, when anyone may create and rename files in ``directory``: a world-writable
    directory without the sticky bit (``/tmp`` has it) lets another user replace a storage file between ``save``
    and ``load``."""
    try:
        mode = os.stat(directory).st_mode
    except OSError:  # not there yet: it is made 0700
        return
    if not (mode & stat.S_IWOTH) or (mode & stat.S_ISVTX) or directory in _warned:
        return
    _warned.add(directory)
    message = Message(
        f"the loader's directory {directory!r} is writable by every user and has no sticky bit, so another user "
        "could replace a storage file there before it is loaded",
        next_step=f"chmod o-w (or +t) {directory!r}, or pass dirname=None for a private 0700 directory",
    )
    warnings.warn(
        str(message),
        UserWarning,
        stacklevel=4,  # the FileStorageLoader(...) call
    )


class Janitor:
    """Deletes tracked files ``ttl`` seconds after they were saved, on its own thread.

    ``track`` only appends under a short lock, so saving never waits for deletions; the
    thread sleeps until the oldest file is due instead of polling. The caller's thread takes only
    C-level locks here, and never waits on a condition, so a Ctrl-C there can leave nothing held
    (NOTE [ Interrupts while waiting ] in ``pool.requests``).
    """

    def __init__(self, ttl: float | None) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)  # waited on by the ttl thread only
        self._due: collections.deque[tuple[float, str]] = collections.deque()
        self._gone: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._thread: threading.Thread | None = None
        self._stop = False

    def track(self, path: str) -> None:
        if self.ttl is None:
            return
        with self._lock:
            self._due.append((time.monotonic() + self.ttl, path))
            if self._thread is None:
                self._stop = False
                thread = threading.Thread(target=self._run, name="inspector-loader-ttl", daemon=True)
                thread.start()
                self._thread = thread  # once started: ``stop`` joins only a thread that runs
            self._cv.notify()

    def note_gone(self, path: str, reason: str) -> None:
        with self._lock:
            self._gone[path] = reason
            while len(self._gone) > _GONE_KEPT:
                self._gone.popitem(last=False)

    def why_missing(self, path: str) -> str | None:
        with self._lock:
            return self._gone.get(path)

    def pending(self) -> int:
        with self._lock:
            return len(self._due)

    def stop(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop = True  # every ttl thread of this janitor sees it within _LONGEST_WAIT_S
            self._due.clear()
            self._cv.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_JOIN_S)

    def after_fork_in_child(self) -> None:
        """The thread did not survive the fork, and the files it tracks are the parent's to delete."""
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
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
    A save holds a ticket in ``saves`` from ``begin_save`` until it discards it (see
    ``FileStorageLoader.save``: the discard is the first step of its ``finally``, so no interrupt
    can keep a ticket after the save has ended).
    Only the process that made a private directory removes it (NOTE [ Loaders across fork ]).
    """

    def __init__(self, dirname: str | os.PathLike[str] | None, ttl: float | None) -> None:
        self.private = dirname is None
        self._dir = None if dirname is None else os.path.abspath(os.fspath(dirname))
        if self._dir is not None:
            warn_if_others_can_replace(self._dir)
        self.janitor = Janitor(ttl)
        self._lock = threading.Lock()
        self.saves: set[object] = set()
        self._closing = False
        self._owner_fd: int | None = None

    @property
    def dirname(self) -> str | None:
        return self._dir

    def begin_save(self, ticket: object) -> str:
        """A fresh path to save into; the directory stays until ``ticket`` leaves ``saves``."""
        while True:
            with self._lock:
                if not self._closing:
                    if self._dir is None:
                        self._dir, self._owner_fd = make_private_directory()
                    elif not self.private and not os.path.isdir(self._dir):
                        os.makedirs(self._dir, mode=0o700, exist_ok=True)
                    self.saves.add(ticket)
                    return os.path.join(self._dir, uuid.uuid4().hex + SUFFIX)
            time.sleep(_POLL_S)  # a close is removing the directory: the next one is made after it

    def close(self, wait: float | None = None) -> None:
        """Stop the ttl thread; a private directory goes away with everything in it, after saves in progress (for at
        most ``wait`` seconds: at interpreter exit, a save that never ends must not keep the process alive)."""
        self.janitor.stop()
        if not self.private:
            return
        try:
            with self._lock:
                if self._dir is None:
                    return
                self._closing = True
            deadline = None if wait is None else time.monotonic() + wait
            while self.saves and (deadline is None or time.monotonic() < deadline):
                time.sleep(_POLL_S)
            directory = self._dir
            if directory is None:  # a close on another thread removed it meanwhile
                return
            try:
                names = os.listdir(directory)
            except OSError:  # gone already (a close on another thread), or never made
                names = []
            for name in names:
                self.janitor.note_gone(os.path.join(directory, name), "removed at shutdown with the private directory")
            shutil.rmtree(directory, ignore_errors=True)
            with self._lock:  # only once it is gone: an interrupted close leaves it for the next one to remove
                if self._dir == directory:
                    self._dir = None
                    release_owner(self._owner_fd)
                    self._owner_fd = None
        finally:
            self._closing = False  # first: an interrupt must not keep later saves waiting

    def after_fork_in_child(self) -> None:
        """See NOTE [ Loaders across fork ]: the parent's private directory is the parent's to remove."""
        self._lock = threading.Lock()
        self.saves = set()
        self._closing = False
        if self.private:
            self._dir = None
            release_owner(self._owner_fd)  # the lock stays the parent's: its descriptor there still holds it
            self._owner_fd = None
        self.janitor.after_fork_in_child()


# NOTE [ Private directories of dead processes ]
# A private directory is removed by ``close``; a process killed outright (SIGKILL, the OOM killer, a
# kernel restart that gives up waiting) never gets there. So every private directory holds an
# ``.owner`` file that its process keeps locked (``flock``) while it lives, and each new private
# directory first removes those whose lock can be taken: the kernel dropped that lock when the last
# descriptor to it closed, which is when its process (and every child it forked) ended. A lock
# works across PID namespaces and is never fooled by a reused process id; a directory without
# the file, not ours, not 0700, or a link is left alone, except one left empty for a minute: an
# interrupt between ``mkdtemp`` and the lock (Ctrl-C, or the interrupt tests) leaves exactly that.


def make_private_directory() -> tuple[str, int]:
    """A new private (0700) directory and the descriptor that holds its ``.owner`` lock; orphans go first."""
    sweep_orphan_directories(tempfile.gettempdir())
    directory = tempfile.mkdtemp(prefix=PRIVATE_PREFIX)
    fd = None
    try:
        # Locked under another name, then renamed: a sweeper never sees an ``.owner`` that is not yet locked.
        staging = os.path.join(directory, OWNER_NAME + ".new")
        fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(staging, os.path.join(directory, OWNER_NAME))
    except BaseException:
        release_owner(fd)
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return directory, fd


def release_owner(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def sweep_orphan_directories(parent: str) -> list[str]:
    """Remove the private directories in ``parent`` whose process has ended (see the NOTE); the paths removed."""
    removed: list[str] = []
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(PRIVATE_PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        if len(removed) >= _SWEPT_AT_MOST:
            break
        if is_orphan(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        elif is_abandoned_empty(entry.path):
            with contextlib.suppress(OSError):  # rmdir: only while it is still empty
                os.rmdir(entry.path)
                removed.append(entry.path)
    return removed


def is_abandoned_empty(directory: str) -> bool:
    """Whether ``directory`` is a private directory of ours left empty for a while: its creation was interrupted
    (Ctrl-C between ``mkdtemp`` and the ``.owner`` lock), a window of microseconds in a live process."""
    try:
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700:
            return False
        return time.time() - info.st_mtime > ABANDONED_AFTER_S and not os.listdir(directory)
    except OSError:
        return False


def is_orphan(directory: str) -> bool:
    """Whether ``directory`` is one of our private directories whose owner's lock is free."""
    try:
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700:
            return False
        fd = os.open(os.path.join(directory, OWNER_NAME), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its process lives
    finally:
        os.close(fd)  # closing it drops the lock just taken, if any
    return True
