"""Reading a whole storage file into memory the caller provides (standard library only: workers import it).

The worker (into a shared-memory segment) and the synchronous ``FileStorage.load`` (into a new
array) open files the same way: ``O_NONBLOCK`` so a FIFO planted at the path cannot hang the
reader, ``fstat`` on the open descriptor so the check and the read see the same file, and a
refusal of anything that is not a regular file.
"""

from __future__ import annotations

import io
import os
import stat
from types import TracebackType

from inspector.loader._errors import StorageCorruptError


class RegularFile:
    """``path`` opened for reading; ``size`` is its length when opened. Use it as a context manager."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            info = os.fstat(self._fd)
            if not stat.S_ISREG(info.st_mode):
                raise StorageCorruptError(path, "not a regular file")
        except BaseException:
            os.close(self._fd)
            raise
        self.size = info.st_size

    def read_into(self, view: memoryview) -> int:
        """Fill ``view`` from the start of the file; the bytes read (fewer if the file shrank)."""
        got = 0
        with io.FileIO(self._fd, closefd=False) as file:
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

    def __enter__(self) -> RegularFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
