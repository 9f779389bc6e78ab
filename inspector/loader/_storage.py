"""Storage handles: a small picklable object naming where a payload lives."""

from __future__ import annotations

import contextlib
import os
import secrets
from abc import ABC, abstractmethod
from typing import Any

from inspector.loader._codec import encode
from inspector.loader._format import PRELUDE_SIZE, align, pack_prelude
from inspector.loader._image import decode_image, read_file_image

_ZEROS = bytes(4096)


class Storage(ABC):
    """Where one payload lives; ``save`` puts it there and ``load`` reads it back synchronously."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    @abstractmethod
    def save(self, data: Any) -> None:
        """Store ``data`` at ``self.path``."""

    @abstractmethod
    def load(self) -> Any:
        """Read the payload back in the calling thread."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Storage) and type(other) is type(self) and other.path == self.path

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.path))


class FileStorage(Storage):
    """A payload in one storage file (see NOTE [ Storage file format ]); no pickle, ever."""

    def save(self, data: Any) -> None:
        """Write ``data`` atomically with mode 0600; an unsupported value raises before any file exists."""
        write_atomic(self.path, encode(data))

    def load(self) -> Any:
        """Read and rebuild the payload in this thread, into private memory."""
        image = read_file_image(self.path)
        obj, _factory = decode_image(image, image.size, self.path)
        return obj


def _write_zeros(file: Any, count: int) -> None:
    while count > 0:
        step = min(count, len(_ZEROS))
        file.write(_ZEROS[:step])
        count -= step


def write_atomic(path: str, encoded: Any) -> None:
    """Write an encoded payload to a private temporary name beside ``path``, then rename it there."""
    directory, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as file:
            file.write(pack_prelude(encoded.header, encoded.data_len))
            file.write(encoded.header)
            position = 0
            _write_zeros(file, align(PRELUDE_SIZE + len(encoded.header)) - PRELUDE_SIZE - len(encoded.header))
            for offset, chunk in encoded.chunks:
                _write_zeros(file, offset - position)
                file.write(chunk)
                position = offset + chunk.nbytes
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise

