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
from inspector.loader.storage.dtypes import numpy_twin
from inspector.loader.storage.layout import PRELUDE_SIZE, parse_prelude
from inspector.loader.storage.plan import Plan, plan_for
from inspector.loader.storage.reader import StorageFile


class ImageFactory:
    """Leaves as views into ``image`` (numpy arrays, and tensors through ``torch.from_numpy``)."""

    def __init__(self, image: np.ndarray, data_start: int) -> None:
        self.image = image
        self.data_start = data_start

    def array(self, dtype: np.dtype, shape: tuple[int, ...], offset: int, nbytes: int) -> Any:
        return np.ndarray(shape, dtype, self.image, self.data_start + offset)

    def tensor(self, dtype: Any, shape: tuple[int, ...], offset: int, nbytes: int, grad: bool) -> Any:
        import torch

        start = self.data_start + offset
        twin = numpy_twin(dtype)
        if twin is not None:
            tensor = torch.from_numpy(np.ndarray(shape, twin, buffer=self.image, offset=start))
        else:
            raw = torch.from_numpy(np.ndarray((nbytes,), np.uint8, buffer=self.image, offset=start))
            tensor = raw.view(dtype).reshape(shape)
        return tensor.requires_grad_(True) if grad else tensor


FactoryMaker = Callable[[np.ndarray, Plan], ImageFactory]


def decode_image(
    image: np.ndarray,
    size: int,
    path: str,
    make_factory: FactoryMaker | None = None,
    plan: Plan | None = None,
) -> tuple[Any, int, float]:
    """(object, leaves, seconds of host-to-device copying) from a file image; ``plan`` is the one checked when the
    file was opened (without it, the prelude and header are read from the image and checked first)."""
    if plan is None:
        prelude = parse_prelude(image[:PRELUDE_SIZE].data, size, path)
        plan = plan_for(image[PRELUDE_SIZE : PRELUDE_SIZE + prelude.header_len].tobytes(), prelude, path)
    elif plan.file_size != size:
        raise StorageCorruptError(path, f"truncated while being read: {size} of {plan.file_size} bytes")
    factory = None
    if make_factory is not None:
        factory = make_factory(image, plan)
    elif plan.has_tensors:
        factory = ImageFactory(image, plan.data_start)
    try:
        obj = plan.build(image, factory)
    except (TypeError, ValueError, RuntimeError) as exc:  # a device copy that failed, say
        raise StorageCorruptError(path, f"cannot build a leaf ({exc})") from None
    return obj, len(plan.leaves), getattr(factory, "h2d_seconds", 0.0)


def read_file_image(path: str) -> tuple[np.ndarray, Plan]:
    """The whole file in a new uint8 array, and its checked plan (the synchronous path; the loader reads into
    shared memory).

    The prelude and header are checked against the file's real size before the array is allocated,
    so a file that only claims to be big, or whose header is garbled, costs nothing.
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
    return image, file.plan
