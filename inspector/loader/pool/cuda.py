"""Delivery to a CUDA device through reused pinned staging buffers and non-blocking copies.

NOTE [ CUDA delivery ]
For a load with ``device='cuda'`` the delivery thread copies the tensor bytes of the file image
(one contiguous span, ``tensor_span`` in the header) from the leased segment into a pinned
staging buffer, then issues one ``non_blocking`` host-to-device copy on a dedicated copy stream,
so the copy engine overlaps both the workers reading the next payloads and whatever the GPU is
computing. Staging buffers come from a pool and go back only after the copy's CUDA event has
completed, never while a copy may still read them; nothing is pinned per load. Each tensor leaf
is then a view of the one device buffer. The buffer is marked as used by the default stream
(``record_stream``), so a consumer on the default stream may free it at any time; a consumer that
uses the tensors on another stream must ``record_stream`` that stream, as with any tensor made
on a side stream. numpy leaves stay numpy arrays in host memory (the same types come back).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.loader._errors import CudaUnavailableError
from inspector.loader.pool.shared_segment import capacity_for
from inspector.loader.storage.image import FactoryMaker, ImageFactory

if TYPE_CHECKING:
    from inspector.loader.storage.plan import Plan

_MAX_FREE_STAGING = 4


def resolve_device(device: Any) -> Any:
    """None for host delivery, else a ``torch.device('cuda', index)``; clear errors otherwise."""
    if device is None or (isinstance(device, str) and device == "cpu"):
        return None
    import torch

    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"Unknown device {device!r} ({exc}). Supported: None, 'cpu', 'cuda', 'cuda:N'") from None
    if resolved.type == "cpu":
        return None
    if resolved.type != "cuda":
        raise ValueError(f"device={device!r} is not supported. Supported: None, 'cpu', 'cuda', 'cuda:N'")
    if not torch.cuda.is_available():
        raise CudaUnavailableError(str(device), "torch.cuda.is_available() is False")
    count = torch.cuda.device_count()
    index = resolved.index if resolved.index is not None else torch.cuda.current_device()
    if index >= count:
        raise CudaUnavailableError(str(device), f"only {count} CUDA device(s) are visible")
    return torch.device("cuda", index)


class StagingPool:
    """Pinned host buffers reused across loads, and one copy stream per device."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[Any] = []
        self._streams: dict[int, Any] = {}

    def factory_maker(self, device: Any) -> FactoryMaker:
        def make(image: np.ndarray, plan: Plan) -> ImageFactory:
            return DeviceFactory(self, image, plan, device)

        return make

    def upload(self, source: np.ndarray, device: Any) -> Any:
        """A new device uint8 tensor holding ``source``'s bytes, complete when this returns."""
        import torch

        staging = self._acquire(source.size)
        try:
            np.copyto(staging.numpy()[: source.size], source)
            stream = self._stream(device)
            with torch.cuda.device(device), torch.cuda.stream(stream):
                out = torch.empty(source.size, dtype=torch.uint8, device=device)
                out.copy_(staging[: source.size], non_blocking=True)
                done = torch.cuda.Event()
                done.record(stream)
            out.record_stream(torch.cuda.default_stream(device))
            done.synchronize()
        finally:
            self._release(staging)
        return out

    def held(self) -> int:
        with self._lock:
            return len(self._free)

    def close(self) -> None:
        with self._lock:
            self._free.clear()
            self._streams.clear()

    def _acquire(self, nbytes: int) -> Any:
        import torch

        wanted = capacity_for(nbytes)
        with self._lock:
            fits = [b for b in self._free if nbytes <= b.numel() <= 2 * wanted]
            if fits:
                best = min(fits, key=lambda b: b.numel())
                self._free.remove(best)
                return best
        return torch.empty(wanted, dtype=torch.uint8, pin_memory=True)

    def _release(self, buffer: Any) -> None:
        with self._lock:
            self._free.append(buffer)
            if len(self._free) > _MAX_FREE_STAGING:
                self._free.remove(min(self._free, key=lambda b: b.numel()))

    def _stream(self, device: Any) -> Any:
        import torch

        with self._lock:
            stream = self._streams.get(device.index)
            if stream is None:
                stream = self._streams[device.index] = torch.cuda.Stream(device=device)
            return stream


class DeviceFactory(ImageFactory):
    """Tensor leaves as views of one device buffer; numpy leaves stay views of the host image."""

    def __init__(self, pool: StagingPool, image: np.ndarray, plan: Plan, device: Any):
        super().__init__(image, plan.data_start)
        self.h2d_seconds = 0.0
        self._device_bytes: Any = None
        self._span = (0, 0)
        span = plan.tensor_span
        if span is not None:
            lo, hi = span
            if not 0 <= lo <= hi <= plan.data_len:
                raise ValueError(f"tensor_span {span} lies outside the data region")
            started = time.perf_counter()
            source = image[plan.data_start + lo : plan.data_start + hi]
            self._device_bytes = pool.upload(source, device)
            self._span = (lo, hi)
            self.h2d_seconds = time.perf_counter() - started

    def tensor(self, dtype: Any, shape: tuple[int, ...], offset: int, nbytes: int, grad: bool) -> Any:
        lo, hi = self._span
        if self._device_bytes is None or not lo <= offset <= offset + nbytes <= hi:
            raise ValueError(f"tensor bytes at {offset} lie outside tensor_span {self._span}")
        tensor = self._device_bytes[offset - lo : offset - lo + nbytes].view(dtype).reshape(shape)
        return tensor.requires_grad_(True) if grad else tensor
