"""A watched decode loop's calls are taken by one check and counted exactly as the dictionary path would count them."""

from __future__ import annotations

import importlib
import threading
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import torch_sdpa
from inspector.dispatch.torch_sdpa import watch_guards
from inspector.dispatch.torch_sdpa.watch_decode import decode_handler
from inspector.dispatch.torch_sdpa.watch_keys import relaxed, signature
from inspector.dispatch.torch_sdpa.watch_records import Decision, Group, WatchedCalls

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.skipif(not watch_guards.available(), reason="PyTorch's TensorGuards is not used on this release"),
]
watch_module = importlib.import_module("inspector.dispatch.torch_sdpa.watch")  # the module, not the class

Call = tuple[tuple[Any, ...], dict[str, Any]]


def _decode_calls() -> list[Call]:
    """Decode-like calls (one query token, GQA) that differ in their key/value length or in one other part each."""
    torch.manual_seed(0)
    q = torch.randn(1, 8, 1, 16)

    def kv(length: int, heads: int = 2, dim: int = 16) -> torch.Tensor:
        return torch.randn(1, heads, length, dim)

    k8, v8 = kv(8), kv(8)
    gqa = {"enable_gqa": True}
    return [
        ((q, k8, v8), gqa),
        ((q, kv(9), kv(9)), gqa),  # the next step: another length
        ((torch.randn(1, 8, 1, 16), kv(30), kv(30)), gqa),  # another query tensor with the same facts
        ((q, kv(5), kv(5)), gqa),  # a shorter cache
        ((q, k8, k8), gqa),  # k and v one tensor
        ((q, kv(1), kv(1)), gqa),  # as long as the query: PyTorch's checks can tell
        ((q, kv(0), kv(0)), gqa),  # empty
        ((q, kv(9), kv(10)), gqa),  # value longer than key
        ((torch.randn(1, 8, 2, 16), kv(9), kv(9)), gqa),  # another query length
        ((q, kv(9, heads=4), kv(9, heads=4)), gqa),
        ((q, kv(9, dim=32), kv(9, dim=32)), gqa),
        ((q, kv(9), torch.randn(1, 2, 16, 9).transpose(2, 3)), gqa),  # the value's last stride is not 1
        ((q, torch.randn(1, 9, 2, 16).transpose(1, 2), kv(9)), gqa),  # another stride, not the last: the same key
        ((q, kv(9).double(), kv(9)), gqa),
        ((q, kv(9), kv(9)), {"enable_gqa": True, "is_causal": True}),
        ((q, kv(9), kv(9)), {"enable_gqa": True, "dropout_p": 0.5}),
        ((q, kv(9), kv(9)), {}),
        ((q, kv(9), kv(9)), {"enable_gqa": True, "attn_mask": torch.ones(1, 9, dtype=torch.bool)}),
    ]


class _Seen:
    """The two ways a decode handler passes a call on: to the kernel (``counted``), either counted
    by the handler itself or by the watch's handler it falls back to (``passed``)."""

    def __init__(self) -> None:
        self.counted, self.passed = 0, 0

    def kernel(self, *args: Any, **kwargs: Any) -> str:
        self.counted += 1
        return "ran"

    def fallback(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.passed += 1
        return call(*args, **kwargs)


def _handler(args: tuple[Any, ...], kwargs: dict[str, Any], keep: int = 0) -> tuple[Any, Group, WatchedCalls, _Seen]:
    """A decode handler for this call, as a watch builds it, with its group, its calls and what it passed on."""
    found = signature(*args, **kwargs)
    decision = Decision("flash_attention", "pytorch", None)
    group = decision.group = Group(decision, 0)
    group.kv_lens += (found[7][-2], found[7][-2])
    calls, seen = WatchedCalls(keep), _Seen()
    handler = decode_handler(found, args, kwargs, decision, calls, seen.fallback, lambda *refusal: None)
    return handler, group, calls, seen


def _query_part(found: tuple[Any, ...]) -> tuple[Any, ...]:
    return found[0], found[3], found[6], found[9], found[12]  # q's class, device, shape, strides, dtype


def test_a_decode_handler_takes_exactly_the_calls_with_its_relaxed_key_and_query() -> None:
    # NOTE [ A growing cache's check ]: the same decision the dictionary path gives through the relaxed key
    calls = _decode_calls()
    for args, kwargs in calls:
        found = signature(*args, **kwargs)
        handler, group, _, seen = _handler(args, kwargs)
        if found[16] is not None:
            assert handler is None  # a mask's shape follows the lengths
            continue
        assert handler is not None
        for other_args, other_kwargs in calls:
            other = signature(*other_args, **other_kwargs)
            same = (
                relaxed(other) == relaxed(found)
                and _query_part(other) == _query_part(found)
                and (other_args[2] is other_args[1]) == (args[2] is args[1])
                and other_kwargs.keys() == kwargs.keys()
            )
            counted, passed = group.count, seen.passed
            assert handler(seen.kernel, other_args, other_kwargs) == "ran"
            taken = (group.count - counted, seen.passed - passed)
            assert taken == ((1, 0) if same else (0, 1)), (found[7], other[7], other_kwargs)


def test_a_decode_handler_widens_its_groups_length_range_and_reads_the_flags_at_each_call() -> None:
    q = torch.randn(1, 8, 1, 16)
    k, v = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    handler, group, calls, seen = _handler((q, k, v), {})
    for length in (9, 30, 5):
        handler(seen.kernel, (q, torch.randn(1, 2, length, 16), torch.randn(1, 2, length, 16)), {})
    handler(seen.kernel, (q, torch.randn(1, 2, 40, 16), torch.randn(1, 2, 41, 16)), {})  # passed on: not in the range
    assert group.kv_lens == [5, 30] and group.count == 3 and calls.seen == 3 and seen.passed == 1
    for allowed in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):  # either flag off
        with sdpa_kernel([allowed]):
            handler(seen.kernel, (q, k, v), {})
    assert group.count == 3 and seen.passed == 3


def test_a_decode_handler_leaves_kept_calls_other_threads_and_keywords_to_the_watch() -> None:
    q = torch.randn(1, 8, 1, 16)
    k, v = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    handler, group, calls, seen = _handler((q, k, v), {}, keep=1)
    handler(seen.kernel, (q, k, v), {})  # the first call is kept in full: the watch keeps it
    calls.seen = 1  # as the watch counts it
    thread = threading.Thread(target=lambda: handler(seen.kernel, (q, k, v), {}))
    thread.start()
    thread.join(30)
    handler(seen.kernel, (q, k), {"value": v})
    assert seen.passed == 3 and group.count == 0
    handler(seen.kernel, (q, k, v), {})
    assert group.count == 1 and calls.seen == 2 and seen.counted == 4


def test_no_decode_handler_where_the_lengths_cannot_grow_alone() -> None:
    q = torch.randn(1, 4, 8, 16)
    kv = torch.randn(1, 4, 8, 16)
    assert _handler((q, q, q), {})[0] is None  # k is q
    assert _handler((q, kv, kv), {})[0] is not None
    assert _handler((q, kv), {"value": kv})[0] is None  # not by position
    weight = torch.nn.Parameter(torch.randn(1, 4, 8, 16))
    assert _handler((q, weight, kv), {})[0] is None  # a tensor subclass


def _decode(steps: int, layers: int, keep: int) -> tuple[Any, bool]:
    q = torch.randn(1, 4, 1, 16)
    watcher = torch_sdpa.watch(keep=keep)
    with watcher as seen:
        for length in range(8, 8 + steps):
            k, v = torch.randn(1, 2, length, 16), torch.randn(1, 2, length, 16)
            for _layer in range(layers):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        fast = watcher._handler != watcher._around
    assert watcher._handler == watcher._around  # the block's end takes its handler out
    return seen, fast


def test_a_watched_decode_loop_builds_no_signature_per_step_and_counts_as_the_dictionary_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = []
    real = watch_module.signature
    monkeypatch.setattr(watch_module, "signature", lambda *a, **k: built.append(1) or real(*a, **k))
    seen, fast = _decode(steps=20, layers=3, keep=4)
    assert fast and len(built) <= 2 + 4  # the first two steps' first calls and the kept ones
    [group] = seen.table().groups
    assert group.count == 60 and "k(1, 2, 8..27, 16)" in group.shapes and seen.seen == 60
    assert [c.facts.shapes[1][2] for c in seen] == [8, 8, 8, 9]  # kept calls have their own lengths
    monkeypatch.setattr(watch_guards, "_works", [False])  # as on a release without the check
    plain, unmatched = _decode(steps=20, layers=3, keep=4)
    assert not unmatched and plain.table().groups == seen.table().groups


def test_a_watched_decode_loop_shows_in_a_profilers_trace() -> None:
    q = torch.randn(1, 4, 1, 16)
    with torch_sdpa.watch(keep=0):
        for length in (8, 9):  # the decode handler is in place from the second step
            F.scaled_dot_product_attention(
                q, torch.randn(1, 2, length, 16), torch.randn(1, 2, length, 16), enable_gqa=True
            )
        with torch.profiler.profile() as prof:
            F.scaled_dot_product_attention(q, torch.randn(1, 2, 10, 16), torch.randn(1, 2, 10, 16), enable_gqa=True)
    assert any(e.name == "torch_sdpa:flash_attention" for e in prof.events())
