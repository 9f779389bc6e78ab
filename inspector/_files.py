"""The one atomic-write helper (a private temporary file beside the target, then a rename), and how a file that
is not a regular one is named in messages."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object], *, mode: int = 0o600) -> Path:
    """Call ``write(file)`` on a temporary file beside ``path``, then rename it over ``path``.

    A reader never sees half a file, and a failure (any ``BaseException``) leaves no temporary
    file behind. The parent directory must exist: a missing one is the caller's error to report.
    An existing target that is not a regular file (a device, FIFO, socket or folder) is refused
    with ``FileExistsError``: renaming over it would replace, say, ``/dev/null`` itself.
    """
    target = Path(path)
    try:
        existing = os.stat(target).st_mode
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing):
        raise FileExistsError(f"{target} exists and is not a regular file; refusing to replace it")
    directory, name = os.path.split(os.path.abspath(target))
    temporary = os.path.join(directory, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as file:
            write(file)
        os.chmod(temporary, mode)  # the umask may have narrowed it
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str, *, mode: int = 0o644) -> Path:
    """``atomic_write`` for a whole UTF-8 text."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda file: file.write(data), mode=mode)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for a message refusing it ("a FIFO"; else "not a regular file")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")
