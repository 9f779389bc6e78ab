"""Copying one batch to the GPU, timed: from pageable memory, from pinned memory, and pinning it first."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from inspector.loader.bench.stats import Spread

H2D_REPEATS = 5


@dataclass(frozen=True)
class HostToDevice:
    """Seconds to copy one batch (``nbytes``) to ``device``: pageable, pinned, and pinning it first."""

    device: str
    nbytes: int
    pageable_s: Spread
    pinned_s: Spread
    pin_s: Spread


def leaves(batch: Any) -> list[Any]:
    """Every leaf of ``batch`` (tensors, arrays, scalars) at any depth of dicts, lists and tuples."""
    torch = sys.modules.get("torch")
    if torch is not None:
        from torch.utils import _pytree

        return list(_pytree.tree_leaves(batch))
    found, stack = [], [batch]
    while stack:  # no torch loaded: a plain walk of dicts, lists and tuples
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        else:
            found.append(node)
    return found


def host_to_device(batch: Any, device: Any) -> HostToDevice | None:
    """Time copying ``batch``'s tensors to the GPU, pageable and pinned (None without CUDA or tensors)."""
    if device is None:
        return None
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    target = torch.device("cuda" if device == "auto" else device)
    tensors = [leaf for leaf in leaves(batch) if isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu"]
    if not tensors:
        return None

    def timed(fn: Any) -> Spread:
        times = []
        fn()  # warm-up
        for _ in range(H2D_REPEATS):
            torch.cuda.synchronize(target)
            began = time.perf_counter()
            fn()
            torch.cuda.synchronize(target)
            times.append(time.perf_counter() - began)
        return Spread.of(times)

    pinned = [t.pin_memory() for t in tensors]
    pageable_s = timed(lambda: [t.to(target, non_blocking=True) for t in tensors])
    pinned_s = timed(lambda: [t.to(target, non_blocking=True) for t in pinned])
    pin_s = timed(lambda: [t.pin_memory() for t in tensors])
    size = sum(int(t.numel() * t.element_size()) for t in tensors)
    return HostToDevice(str(target), size, pageable_s, pinned_s, pin_s)
