"""``watch()`` against the bare call, measured in one run: per call, in a Llama-style model, and in memory.

* Per call: one small SDPA call (q/k/v (2, 4, 64, 32), causal, CPU) bare and watched, once its
  signature was seen (target: at most 5 µs); then the same with PyTorch's kernel replaced by a
  function that does nothing, which is the same difference without the kernel's own spread and
  without what the kernel does to the caches the watch's own work then misses (same target).
* A Llama-style decoder in pure PyTorch (``bench_model``: grouped-query heads, causal prefill,
  one-token decode steps that grow a KV cache as ``generate()`` does, so every step is a call
  signature never seen before, and a training step: forward, loss, backward), watched against
  bare (target: at most 1.05x each).
* Memory: the resident set's growth over 1,000,000 watched calls (target: a few MiB).

Bare and watched batches take turns inside one ``watch()`` block (the bare ones with the wrapped
function put back), so a busy machine slows both alike; a round's figure is the median of its
batches (for decode steps, of its adjacent bare/watched pairs' ratios), and each figure is the
median of the rounds, with their range.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from inspector._bench import Measurement, Progress
from inspector.dispatch.torch_sdpa import interception
from inspector.dispatch.torch_sdpa.bench_model import LlamaStyle
from inspector.dispatch.torch_sdpa.watch import WatchedCalls, watch

PER_CALL_TARGET_US = 5.0
MODEL_TARGET = 1.05
MEMORY_TARGET_MIB = 4.0
MEMORY_CALLS = 1_000_000
PREFILL = 64
DECODE_STEPS = 2  # per batch: DECODE_TURNS batches a round, so a round grows the cache to PREFILL + 160 tokens
DECODE_TURNS = 80
PAIRS = 10  # bare and watched batches a round (``_rounds``)


def _seconds(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def _rounds(fn: Callable[[], object], number: int, rounds: int, warm: int) -> tuple[list[float], list[float]]:
    """Seconds per call of ``fn`` bare and watched, ``rounds`` times.

    One ``watch()`` block stays open; within it, bare and watched batches of ``number`` calls take
    turns, ``PAIRS`` of each per round, the bare ones with ``F.scaled_dot_product_attention`` put
    back to the function the watch wraps (NOTE [ Intercepting SDPA calls ]), so each pair runs
    moments apart and a busy machine slows both alike. A round's figure is the median of its
    batches, so a batch that another process interrupted does not move it.
    """
    bare, watched = [], []
    with watch():
        wrapper = F.scaled_dot_product_attention
        inner = interception.wrapped()
        for _ in range(warm):  # past the calls kept in full: the steady state
            fn()
        try:
            for _ in range(rounds):
                batches: tuple[list[float], list[float]] = ([], [])
                for _ in range(PAIRS):
                    F.scaled_dot_product_attention = inner  # type: ignore[assignment]
                    batches[0].append(_seconds(fn, number))
                    F.scaled_dot_product_attention = wrapper
                    batches[1].append(_seconds(fn, number))
                bare.append(statistics.median(batches[0]) / number)
                watched.append(statistics.median(batches[1]) / number)
        finally:
            F.scaled_dot_product_attention = wrapper
    return bare, watched


def _median_spread(values: list[float]) -> tuple[float, tuple[float, float]]:
    return statistics.median(values), (min(values), max(values))


def per_call(rounds: int = 9) -> list[Measurement]:
    """The watch's cost per call over the bare call (real kernel, and around a function that does nothing)."""
    q, k, v = (torch.randn(2, 4, 64, 32) for _ in range(3))

    def call() -> None:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)  # the attribute is looked up per call, as models do

    bare, watched = _rounds(call, 30, rounds, 1100)
    diffs = [(w - b) * 1e6 for b, w in zip(bare, watched, strict=True)]
    diff, spread = _median_spread(diffs)
    base, base_spread = _median_spread([b * 1e6 for b in bare])
    figures = [
        Measurement(
            "dispatch",
            "watch() per call over the bare call (q/k/v (2, 4, 64, 32), causal, CPU)",
            diff,
            "µs",
            "the bare call",
            base,
            None,
            "",
            f"<= {PER_CALL_TARGET_US:g} µs",
            diff <= PER_CALL_TARGET_US,
            spread,
            base_spread,
        )
    ]
    original = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = _nothing  # type: ignore[assignment]
    try:
        bare, watched = _rounds(call, 200, rounds, 1100)
    finally:
        F.scaled_dot_product_attention = original
    own = [(w - b) * 1e6 for b, w in zip(bare, watched, strict=True)]
    value, spread = _median_spread(own)
    figures.append(
        Measurement(
            "dispatch",
            "watch() per call over the bare call, around a kernel that does nothing",
            value,
            "µs",
            target=f"<= {PER_CALL_TARGET_US:g} µs",
            ok=value <= PER_CALL_TARGET_US,
            spread=spread,
        )
    )
    return figures


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _calls_per_step(fn: Callable[[], object]) -> int:
    with watch(keep=0) as seen:
        fn()
    return seen.seen


def model(rounds: int = 9, own_us: float | None = None) -> list[Measurement]:
    """A Llama-style decoder's forward, decode step and training step, watched against bare.

    Beside each measured ratio, ``own_us`` (the watch's own cost per call) times the step's SDPA
    calls gives the ratio that cost alone makes: what the measured one reads as on a quiet machine.
    """
    torch.manual_seed(0)
    net = LlamaStyle()
    ids = torch.randint(0, net.config.vocab, (2, 64))
    net.eval()

    def forward() -> None:
        with torch.no_grad():
            net(ids)

    optimizer = torch.optim.SGD(net.parameters(), lr=1e-4)

    def train_step() -> None:
        optimizer.zero_grad(set_to_none=True)
        logits = net(ids[:, :-1])
        torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)).backward()
        optimizer.step()

    figures = []
    for name, fn, number in (
        ("forward (2 x 64 tokens)", forward, 1),
        (f"one-token decode steps, KV cache growing from {PREFILL} tokens, past the calls kept", None, DECODE_STEPS),
        ("training step (forward, loss, backward, SGD)", train_step, 1),
    ):
        if fn is None:
            bare, ratios = _decode_rounds(net, ids, number, rounds)
        else:
            bare, watched = _rounds(fn, number, rounds, 3)
            ratios = [w / b for b, w in zip(bare, watched, strict=True)]
        ratio, spread = _median_spread(ratios)
        base = statistics.median(bare) * 1e3
        label = "the bare run (median of rounds)"
        if own_us is not None:
            calls = net.config.layers if fn is None else _calls_per_step(fn)
            label += f"; its {calls} SDPA calls x {own_us:.3g} µs make {1 + calls * own_us / (base * 1e3):.4f}x"
        figures.append(
            Measurement(
                "dispatch",
                f"Llama-style decoder (4 layers, GQA 8/2 heads), {name}: watched",
                base * ratio,
                "ms",
                "bare",
                base,
                ratio,
                label,
                f"<= {MODEL_TARGET:g}x",
                ratio <= MODEL_TARGET,
                (spread[0] * base, spread[1] * base),
            )
        )
    return figures


def _decode_rounds(net: LlamaStyle, ids: torch.Tensor, number: int, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds per bare decode step, and the watched/bare ratio, ``rounds`` times, over caches that grow every step.

    One ``watch()`` block stays open, as in ``_rounds``, and is first taken past the calls it keeps
    in full (``_past_kept_calls``: the steady state of a long ``generate()``, as the per-call figure
    measures). Each round is then one generation: a ``PREFILL``-token prompt, then batches of
    ``number`` one-token steps, each appending to the KV cache as Hugging Face's ``DynamicCache``
    does (``torch.cat``: a new key/value length, so a new call signature, every step). Bare and
    watched batches take turns in the order bare, watched, watched, bare; each adjacent pair,
    run moments apart, gives a ratio, and a round's ratio is the median of its pairs', so a spell
    in which another process slows the machine moves only the pairs it falls in.
    """
    bare, ratios = [], []
    token = ids[:1, :1]
    with watch() as seen:
        _past_kept_calls(net, ids, seen)
        wrapper = F.scaled_dot_product_attention
        inner = interception.wrapped()
        try:
            for _ in range(rounds):
                caches = net.new_caches()
                F.scaled_dot_product_attention = inner  # type: ignore[assignment]
                with torch.no_grad():
                    net(ids[:1, :PREFILL], caches)
                batches: tuple[list[float], list[float]] = ([], [])
                for turn in range(DECODE_TURNS):
                    which = (0, 1, 1, 0)[turn % 4]
                    F.scaled_dot_product_attention = wrapper if which else inner  # type: ignore[assignment]
                    start = time.perf_counter()
                    with torch.no_grad():
                        for _ in range(number):
                            net(token, caches)
                    batches[which].append(time.perf_counter() - start)
                bare.append(statistics.median(batches[0]) / number)
                ratios.append(statistics.median(w / b for b, w in zip(batches[0], batches[1], strict=True)))
        finally:
            F.scaled_dot_product_attention = wrapper
    return bare, ratios


def _past_kept_calls(net: LlamaStyle, ids: torch.Tensor, seen: WatchedCalls) -> None:
    """Watched decode steps until the block has seen more calls than it keeps in full (a fresh
    cache whenever one fills)."""
    token, caches = ids[:1, :1], net.new_caches()
    with torch.no_grad():
        while seen.seen <= seen.keep:
            if not caches[0] or caches[0][0].shape[2] >= net.config.max_len - 1:
                caches = net.new_caches()
                net(ids[:1, :PREFILL], caches)
            net(token, caches)


def _resident_mib() -> float:
    try:
        with open("/proc/self/statm") as file:
            pages = int(file.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):  # not Linux: the peak is the best there is
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory(calls: int = MEMORY_CALLS) -> list[Measurement]:
    """How much the process grows over ``calls`` watched SDPA calls (one signature: counts, not records)."""
    q = torch.randn(1, 1, 4, 8)
    with watch():
        for _ in range(2000):  # the calls kept in full, and the allocator's first pages
            F.scaled_dot_product_attention(q, q, q)
        before = _resident_mib()
        for _ in range(calls):
            F.scaled_dot_product_attention(q, q, q)
        grown = _resident_mib() - before
    return [
        Measurement(
            "dispatch",
            f"watch() memory growth over {calls:,} calls",
            grown,
            "MiB",
            target=f"<= {MEMORY_TARGET_MIB:g} MiB",
            ok=grown <= MEMORY_TARGET_MIB,
        )
    ]


def measure(rounds: int = 9, progress: Progress | None = None, calls: int = MEMORY_CALLS) -> list[Measurement]:
    """Every ``watch()`` figure (see the module's docstring), on one thread as the other dispatch figures."""
    figures: list[Measurement] = []

    def own_cost() -> float | None:
        own = [m for m in figures if m.name.endswith("around a kernel that does nothing")]
        return own[0].value if own else None

    steps = (
        ("per call", lambda: per_call(rounds)),
        ("Llama-style model", lambda: model(rounds, own_cost())),
        (f"memory over {calls:,} calls", lambda: memory(calls)),
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for done, (what, step) in enumerate(steps):
            if progress is not None:
                progress(done, len(steps), f"torch_sdpa.watch: {what}")
            figures += step()
    finally:
        torch.set_num_threads(threads)
    if progress is not None:
        progress(len(steps), len(steps), "torch_sdpa.watch: done")
    return figures
