"""The one way a storage file is opened and checked.

Every reader goes through ``StorageFile``: the synchronous ``FileStorage.load`` (into a new
array), the pool before it picks a segment and hands the open descriptor to a worker, and
``describe_storage``. It opens with ``O_NONBLOCK`` so a FIFO planted at the path cannot hang
the reader, refuses anything that is not a regular file, takes the size from the open descriptor
(``fstat``, or the end a first short read of a small file reaches: so the check and the read see
the same file), reads the 32 prelude bytes and the header (one ``pread`` when the header is
small) and checks them completely against that size before anything else is read or reserved:
prelude, header CRC, JSON, and every leaf against the data region (NOTE [ Storage file format ]
in ``layout``, NOTE [ Header plans ] in ``plan``).

``read_whole`` is the one other way, for a small file the page cache holds (the loader's inline
reads, NOTE [ Small loads in the caller ] in ``pool.inline``): it reads the whole file into a
recycled buffer with one call (room for the size the file had last time, plus a byte so its end
is seen), and only then runs the same checks on the bytes it got. Reading first costs nothing a
hostile file could inflate: the room is bounded by the loader's ``inline_bytes``, and a file
found larger is left unchecked for a worker, which reads the header first.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from inspector._files import file_kind
from inspector.loader._errors import StorageCorruptError, StorageNotFoundError
from inspector.loader.storage.layout import PRELUDE_SIZE, Prelude, parse_prelude
from inspector.loader.storage.plan import Plan, plan_for

if TYPE_CHECKING:
    import numpy as np

HEAD_READ = 4096  # bytes read at once from the start: the prelude and, for most payloads, the whole header
_NOWAIT = getattr(os, "RWF_NOWAIT", None)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class StorageFile:
    """``path`` opened for reading with its prelude and header checked; ``size``, ``prelude`` and ``plan`` describe it.

    Raises ``FileNotFoundError`` (the caller knows why a file may be gone), ``StorageCorruptError``
    for anything that is not a complete storage file, and ``OSError`` for the rest (EMFILE, EACCES).
    With ``nowait`` it reads only what the page cache holds, and raises ``BlockingIOError`` rather than
    wait for a disk (or where the system cannot tell).
    """

    __slots__ = ("_fd", "head", "path", "plan", "prelude", "size")

    def __init__(self, path: str, nowait: bool = False) -> None:
        self.path = path
        self._fd = os.open(path, _OPEN_FLAGS)
        try:
            try:
                head = _read_head(self._fd, nowait)
            except BlockingIOError:
                raise
            except OSError:  # a FIFO (ESPIPE) or a directory (EISDIR): say which
                self._regular_size()
                raise
            self.head = head
            # A regular file reads short only at its end: a small file's size needs no fstat. Anything else that
            # reads short (a device) is refused by the prelude checks; a full first read asks fstat.
            self.size = len(head) if len(head) < HEAD_READ else self._regular_size()
            self.prelude: Prelude = parse_prelude(head, self.size, path)
            length = self.prelude.header_len
            if len(head) >= PRELUDE_SIZE + length:
                header = head[PRELUDE_SIZE : PRELUDE_SIZE + length]
            else:
                header = os.pread(self._fd, length, PRELUDE_SIZE)
            if len(header) != length:
                raise StorageCorruptError(path, "truncated while reading its header")
            self.plan: Plan = plan_for(header, self.prelude, path)
        except BaseException:
            os.close(self._fd)
            raise

    def _regular_size(self) -> int:
        return _regular_size(self._fd, self.path)

    def fileno(self) -> int:
        return self._fd

    def read_into(self, view: memoryview, nowait: bool = False) -> int:
        """Fill ``view`` from the start of the file; the bytes read (fewer if the file shrank). With ``nowait``,
        ``BlockingIOError`` when a part is not in the page cache."""
        if nowait:
            return _read_nowait(self._fd, view)
        got = 0
        with io.FileIO(self._fd, closefd=False) as file:
            file.seek(0)
            while got < len(view):
                n = file.readinto(view[got:])
                if not n:
                    break
                got += n
        return got

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __enter__(self) -> StorageFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _read_head(fd: int, nowait: bool) -> bytes:
    if not nowait:
        return os.pread(fd, HEAD_READ, 0)
    head = bytearray(HEAD_READ)
    return bytes(head[: _read_nowait(fd, memoryview(head))])


def _read_nowait(fd: int, view: memoryview) -> int:
    if _NOWAIT is None:
        raise BlockingIOError("this system cannot read without waiting")
    got = 0
    try:
        while got < len(view):
            n = os.preadv(fd, [view[got:]], got, _NOWAIT)
            if not n:
                break
            got += n
    except OSError as exc:  # EAGAIN: not cached; EOPNOTSUPP: this file system cannot say
        if isinstance(exc, BlockingIOError):
            raise
        raise BlockingIOError(exc.errno, exc.strerror) from None
    return got


def _regular_size(fd: int, path: str) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise StorageCorruptError(path, f"not a regular file ({file_kind(info.st_mode)})")
    return info.st_size


def read_whole(
    path: str, lease: Callable[[int], np.ndarray], expected: int, admit: Callable[[int], bool]
) -> tuple[np.ndarray, int, Plan] | None:
    """(image, size, plan): ``path`` read whole from the page cache into ``lease(n)``'s array, then checked like a
    ``StorageFile``; None when ``admit(size)`` refuses it (nothing is checked then: a worker reads it).

    ``expected`` is the size the file had last time (0 when unknown: the first read then takes ``HEAD_READ``
    bytes, and a longer file is sized with ``fstat`` and read on into a larger buffer). A part not in the page
    cache raises ``BlockingIOError``; errors are those of ``StorageFile``.
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        room = expected + 1 if expected > 0 else HEAD_READ
        image = lease(room)
        got = _fill_nowait(fd, image.data, 0)
        if got < room:  # the end was seen: this is the file's size (anything but a regular file fails the checks)
            size = got
            if not admit(size):
                return None
        else:
            size = _regular_size(fd, path)
            if not admit(size):
                return None
            if size < got:
                raise StorageCorruptError(path, "changed while being read")
            if size > got:
                larger = lease(size)
                larger[:got] = image[:got]
                image = larger
                if _fill_nowait(fd, image.data, got) != size:
                    raise StorageCorruptError(path, f"truncated while being read: fewer than {size} bytes")
    finally:
        os.close(fd)
    prelude = parse_prelude(image.data[: min(size, PRELUDE_SIZE)], size, path)
    header = image.data[PRELUDE_SIZE : PRELUDE_SIZE + prelude.header_len].tobytes()
    return image, size, plan_for(header, prelude, path)


def _fill_nowait(fd: int, view: memoryview, got: int) -> int:
    """Read into ``view`` from offset ``got`` until it is full or the file ends; the bytes in ``view`` then.

    A read that stops short of a page boundary has met the end of the file; one that stops on a boundary may have
    met a page the cache lacks, so it reads on (``BlockingIOError`` if so, 0 bytes at the end).
    """
    if _NOWAIT is None:
        raise BlockingIOError("this system cannot read without waiting")
    try:
        while got < len(view):
            n = os.preadv(fd, [view[got:]], got, _NOWAIT)
            got += n
            if not n or got % _PAGE:
                break
    except OSError as exc:  # EAGAIN: not cached; EOPNOTSUPP: this file system cannot say; ESPIPE: a FIFO
        if isinstance(exc, BlockingIOError):
            raise
        raise BlockingIOError(exc.errno, exc.strerror) from None  # a worker reads it, and says what is wrong
    return got


def open_for_load(
    path: str, why_missing: Callable[[str], str | None], *, nowait: bool = False
) -> StorageFile | BaseException:
    """The checked ``StorageFile`` at ``path``, or the error its load fails with (``load_error``). With ``nowait``,
    a file the page cache does not hold whole raises ``BlockingIOError``: the caller reads it some other way."""
    try:
        return StorageFile(path, nowait=nowait)
    except BlockingIOError as exc:
        if nowait:
            raise
        return load_error(exc, path, why_missing)
    except Exception as exc:
        return load_error(exc, path, why_missing)


def load_error(exc: Exception, path: str, why_missing: Callable[[str], str | None]) -> BaseException:
    """What a load fails with when opening or checking its file raised ``exc``: a missing file as
    ``StorageNotFoundError`` (with why, when the loader knows), an OS refusal (EMFILE, EACCES) naming the path,
    anything unexpected as itself (a path the OS refuses as a value)."""
    if isinstance(exc, FileNotFoundError):
        return StorageNotFoundError(path, why_missing(path))
    if isinstance(exc, StorageCorruptError):
        return exc
    if isinstance(exc, OSError):
        return OSError(exc.errno, f"Could not open {path!r} to load it: {exc.strerror}")
    return exc
