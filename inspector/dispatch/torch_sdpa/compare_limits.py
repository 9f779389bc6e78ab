"""What ``compare`` refuses before it allocates anything: calls too big for this machine, and nested inputs.

``compare`` runs every backend on real tensors and ``math`` once more in float64, so the memory
it needs is about that of ``math``'s attention scores, (batch, heads, q_len, kv_len), several
times over (scores, softmax, their gradients, the float64 copies). A call whose estimate passes
the memory this machine has free, or whose one float64 reference run would take far longer than
the time budget, is refused with a message that says which sizes to shrink.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from inspector.dispatch.torch_sdpa.facts import SdpaCall

# The float64 reference's multiply-adds per second, at a rate a busy laptop core reaches.
REFERENCE_MACS_PER_S = 4e9
# How many budgets' worth one reference run may take before the call is refused.
OVER_BUDGET = 20.0


def free_bytes(device: str = "cpu") -> int | None:
    """Memory free for new tensors on ``device`` (``None`` where it cannot be read)."""
    if device == "cuda":
        try:
            return int(torch.cuda.mem_get_info()[0])
        except Exception:  # no CUDA context here: nothing to read
            return None
    try:
        with open("/proc/meminfo") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def needs(facts: SdpaCall, backward: bool) -> tuple[int, float]:
    """About how many bytes ``compare`` allocates for the call, and the float64 reference's
    multiply-adds (the inputs, the scores ``math`` materialises, in the call's dtype and in float64)."""
    q, k, v = (tuple(int(d) for d in s) for s in facts.shapes)
    inputs = sum(math.prod(s) for s in (q, k, v))
    if len(q) >= 2 and len(k) >= 2:
        lead = math.prod(q[:-2]) if len(q) > 2 else 1
        scores = lead * q[-2] * k[-2]
        macs = float(lead) * q[-2] * k[-2] * (q[-1] + v[-1])
    else:
        scores, macs = 0, float(inputs)
    mask = math.prod(facts.mask_shape) if facts.mask_shape is not None else 0
    size = max(int(getattr(facts.dtypes[0], "itemsize", 4)), 1)
    copies = 3 if backward else 2  # scores and softmax; their gradients with backward
    total = (inputs + mask + copies * scores) * (size + 8) + inputs * 8  # the call's dtype and the float64 reference
    return int(total), macs * (3.0 if backward else 1.0)


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def refuse_what_cannot_run(facts: SdpaCall, budget_s: float, backward: bool, *, how: str = "") -> None:
    """``ValueError`` for a call ``compare`` cannot run here in bounded memory and time; ``how``
    names the sizes to change in the caller's own terms (the command line's ``--extra``)."""
    shrink = how or "smaller batch, heads, sequence lengths or head dim"
    if facts.nested:
        raise ValueError(
            "compare times dense tensors and cannot run nested ones (torch.nested): pad them to dense tensors "
            "with a mask to time the backends, or call trace_call(...) for PyTorch's decision without running"
        )
    want, macs = needs(facts, backward)
    free = free_bytes("cuda" if facts.device == "cuda" else "cpu")
    if free is not None and want > free:
        raise ValueError(
            f"Timing this call would allocate about {_gib(want)} ({facts.device} has {_gib(free)} free): math, "
            f"which compare also runs in float64 as the reference, materialises the (batch, heads, seq_len, "
            f"kv_len) scores. Use {shrink}, or drop the timing to get PyTorch's decision without running"
        )
    seconds = macs / REFERENCE_MACS_PER_S
    if seconds > OVER_BUDGET * budget_s and seconds > 10.0:
        raise ValueError(
            f"One float64 reference run of this call would take about {seconds:.3g} s here, far past the "
            f"{budget_s:g} s time budget. Use {shrink}, or drop the timing to get PyTorch's decision without running"
        )
