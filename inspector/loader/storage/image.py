"""Objects from a *file image*: the bytes of a whole storage file in one uint8 array.

The same code serves the synchronous ``FileStorage.load`` (image in private memory) and the
loader (image in a leased shared-memory segment): every leaf is a view into the image, so one
image holds one payload and nothing else ever writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from inspector.loader._errors import StorageCorruptError, StorageNotFoundError
from inspector.loader.storage.decode import decode, parse_header
from inspector.loader.storage.dtypes import numpy_twin
from inspector.loader.storage.layout import PRELUDE_SIZE, Prelude, check_header_crc, parse_prelude
from inspector.loader.storage.reader import StorageFile


class ImageFactory:
    """Leaves as views into ``image`` (numpy arrays, and tensors through ``torch.from_numpy``)."""

    def __init__(self, image: np.ndarray, data_start: int) -> None:
        self.image = image
        self.data_start = data_start
        self.leaves = 0

    def array(self, dtype: np.dtype, shape: tuple[int, ...], offset: int, nbytes: int) -> Any:
        self.leaves += 1
        return np.ndarray(shape, dtype, buffer=self.image, offset=self.data_start + offset)

    def tensor(self, dtype: Any, shape: tuple[int, ...], offset: int, nbytes: int, grad: bool) -> Any:
        import torch

        self.leaves += 1
        start = self.data_start + offset
        twin = numpy_twin(dtype)
        if twin is not None:
            tensor = torch.from_numpy(np.ndarray(shape, twin, buffer=self.image, offset=start))
        else:
            raw = torch.from_numpy(np.ndarray((nbytes,), np.uint8, buffer=self.image, offset=start))
            tensor = raw.view(dtype).reshape(shape)
        return tensor.requires_grad_(True) if grad else tensor


def read_header(
    image: np.ndarray, size: int, path: str, prelude: Prelude | None = None
) -> tuple[Prelude, dict[str, Any]]:
    """The prelude and parsed header of a file image; ``prelude`` is one already checked when the file was opened.

    The header bytes in the image are checked against the prelude's CRC either way: memory is not the file.
    """
    if prelude is None or prelude.file_size != size:
        prelude = parse_prelude(image[:PRELUDE_SIZE].data, size, path)
    header = image[PRELUDE_SIZE : PRELUDE_SIZE + prelude.header_len].data
    check_header_crc(header, prelude, path)
    return prelude, parse_header(header, path)


FactoryMaker = Callable[[np.ndarray, Prelude, dict[str, Any]], ImageFactory]


def decode_image(
    image: np.ndarray,
    size: int,
    path: str,
    make_factory: FactoryMaker | None = None,
    prelude: Prelude | None = None,
) -> tuple[Any, ImageFactory]:
    """(object, the factory that built its leaves) from a file image; ``StorageCorruptError`` if unsound."""
    prelude, doc = read_header(image, size, path, prelude)
    factory = ImageFactory(image, prelude.data_start) if make_factory is None else make_factory(image, prelude, doc)
    try:
        obj = decode(doc, factory, prelude.data_len, path)
    except StorageCorruptError:
        raise
    except (TypeError, ValueError, RuntimeError) as exc:  # e.g. requires_grad on an integer tensor
        raise StorageCorruptError(path, f"cannot build a leaf ({exc})") from None
    return obj, factory


def read_file_image(path: str) -> np.ndarray:
    """The whole file in a new uint8 array (the synchronous path; the loader reads into shared memory).

    The prelude is checked against the file's real size before the array is allocated, so a
    file that only claims to be big costs nothing.
    """
    try:
        file = StorageFile(path)
    except FileNotFoundError:
        raise StorageNotFoundError(path) from None
    with file:
        image = np.empty(file.size, np.uint8)
        got = file.read_into(image.data)
    if got != file.size:
        raise StorageCorruptError(path, f"truncated while being read: {got} of {file.size} bytes")
    return image
