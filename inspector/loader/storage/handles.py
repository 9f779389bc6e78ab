"""Storage handles: a small picklable object naming where a payload lives."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any, BinaryIO

from inspector._files import atomic_write
from inspector.loader.storage.encode import Encoded, encode
from inspector.loader.storage.image import decode_image, read_file_image
from inspector.loader.storage.layout import PRELUDE_SIZE, align, pack_prelude

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
        image, plan = read_file_image(self.path)
        obj, _leaves, _h2d = decode_image(image, image.size, self.path, plan=plan)
        return obj


def _write_zeros(file: BinaryIO, count: int) -> None:
    while count > 0:
        step = min(count, len(_ZEROS))
        file.write(_ZEROS[:step])
        count -= step


def write_atomic(path: str, encoded: Encoded) -> None:
    """Write an encoded payload under a private temporary name beside ``path`` (mode 0600), then rename it."""

    def write(file: BinaryIO) -> None:
        file.write(pack_prelude(encoded.header, encoded.data_len))
        file.write(encoded.header)
        _write_zeros(file, align(PRELUDE_SIZE + len(encoded.header)) - PRELUDE_SIZE - len(encoded.header))
        position = 0
        for offset, chunk in encoded.chunks:
            _write_zeros(file, offset - position)
            file.write(chunk)
            position = offset + chunk.nbytes

    atomic_write(path, write, mode=0o600)
