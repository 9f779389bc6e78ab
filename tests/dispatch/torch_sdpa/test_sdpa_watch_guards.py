"""The first-level check of ``watch()`` takes a call exactly when its signature is the one it was built for."""

from __future__ import annotations

import importlib
import itertools
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import torch_sdpa
from inspector.dispatch.torch_sdpa import watch_guards
from inspector.dispatch.torch_sdpa.watch_guards import growing_matcher, matcher
from inspector.dispatch.torch_sdpa.watch_keys import relaxed, signature

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.skipif(not watch_guards.available(), reason="PyTorch's TensorGuards is not used on this release"),
]
watch_module = importlib.import_module("inspector.dispatch.torch_sdpa.watch")  # the module, not the class

Call = tuple[tuple[Any, ...], dict[str, Any]]


def _calls() -> list[Call]:
    """Calls that differ from the first in one part of their signature each, or in none."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4, 8, 16) for _ in range(3))
    kv = torch.randn(1, 2, 8, 16)
    mask = torch.ones(8, 8, dtype=torch.bool)
    return [
        ((q, k, v), {}),
        ((torch.randn(1, 4, 8, 16), torch.randn(1, 4, 8, 16), torch.randn(1, 4, 8, 16)), {}),  # the same signature
        ((q, k, v), {"is_causal": True}),
        ((q, k, v, None, 0.0, True), {}),  # the same call, positional
        ((q, k, v), {"dropout_p": 0.5}),
        ((q, k, torch.randn(1, 4, 9, 16)), {}),
        ((q, k, torch.randn(1, 8, 4, 16).transpose(1, 2)), {}),  # another stride
        ((q, k, v.double()), {}),
        ((q, k, v.clone().requires_grad_()), {}),
        ((q, k, v), {"attn_mask": mask}),
        ((q, k, v, mask), {}),
        ((q, k, v), {"attn_mask": torch.ones(8, 8, dtype=torch.bool)}),  # another mask, the same facts
        ((q, k, v), {"attn_mask": torch.zeros(8, 8)}),
        ((q, k, v), {"attn_mask": torch.ones(1, 8, dtype=torch.bool)}),
        ((q, kv, kv), {"enable_gqa": True}),
        ((q, kv, kv.clone()), {"enable_gqa": True}),  # k and v no longer one tensor
        ((q, q, q), {}),
        ((k, k, k), {}),
        ((q, q, v), {}),
        ((q, k, v), {"scale": 0.5}),  # scale is not part of a signature: PyTorch's choice does not read it
    ]


def _aliasing(args: tuple[Any, ...]) -> tuple[bool, bool, bool]:
    q, k, v = args[:3]
    return k is q, v is k, v is q


def test_a_matcher_takes_exactly_the_calls_with_its_signature() -> None:
    calls = _calls()
    for (args, kwargs), (other_args, other_kwargs) in itertools.product(calls, calls):
        found = signature(*args, **kwargs)
        matches = matcher(found, args, kwargs)
        assert matches is not None
        assert matches(*args, **kwargs)
        # stricter than the signature in one way only: which of q, k and v are one tensor
        same = signature(*other_args, **other_kwargs) == found and _aliasing(other_args) == _aliasing(args)
        assert matches(*other_args, **other_kwargs) == same


def test_a_matcher_reads_the_flags_and_grad_mode_at_each_call() -> None:
    q = torch.randn(1, 4, 8, 16, requires_grad=True)
    k, v = torch.randn(1, 4, 8, 16), torch.randn(1, 4, 8, 16)
    matches = matcher(signature(q, k, v), (q, k, v), {})
    assert matches is not None and matches(q, k, v)
    with sdpa_kernel([SDPBackend.MATH]):
        assert not matches(q, k, v)
    with torch.no_grad():
        assert not matches(q, k, v)  # no input requires grad now as far as PyTorch's check is concerned
    plain = matcher(signature(k, k, v), (k, k, v), {})
    with torch.no_grad():
        assert plain is not None and plain(k, k, v)  # nothing requires grad: the mode is not part of it


def test_no_matcher_for_calls_the_check_cannot_take() -> None:
    q = torch.randn(1, 4, 8, 16)
    weight = torch.nn.Parameter(torch.randn(1, 4, 8, 16))
    assert matcher(signature(weight, q, q), (weight, q, q), {}) is None  # a tensor subclass
    assert matcher(signature(q, weight, q), (q, weight, q), {}) is None
    assert matcher(signature(q, q, q, q), (q, q, q, q), {}) is None  # the mask is q itself


def test_only_tested_releases_use_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    assert watch_guards._tensor_guards() is not None
    monkeypatch.setattr(torch, "__version__", "2.99.0")
    assert watch_guards._tensor_guards() is None
    monkeypatch.setattr(torch, "__version__", "not a version")
    assert watch_guards._tensor_guards() is None


def _watched_table(calls: int) -> tuple[Any, Any]:
    q, k, v = (torch.randn(1, 4, 8, 16) for _ in range(3))
    grad_q = q.clone().requires_grad_()
    watcher = torch_sdpa.watch(keep=5)
    with watcher as seen:
        for _ in range(calls):
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
        with sdpa_kernel([SDPBackend.MATH]):
            for _ in range(calls):
                F.scaled_dot_product_attention(q, k, v, is_causal=True)
        for _ in range(calls):
            F.scaled_dot_product_attention(grad_q, k, v, is_causal=True)
            with torch.no_grad():
                F.scaled_dot_product_attention(grad_q, k, v, is_causal=True)
        matched = watcher._match
    return seen, matched


def test_calls_the_matcher_takes_are_counted_as_any_other(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 3 * watch_module.STREAK
    seen, matched = _watched_table(calls)
    assert matched is not None  # the last streak got a matcher
    assert seen.backends() == {"flash_attention": 3 * calls, "math": calls}
    assert sorted((g.backend, g.grad, g.count) for g in seen.table().groups) == [
        ("flash_attention", False, 2 * calls),
        ("flash_attention", True, calls),
        ("math", False, calls),
    ]
    assert seen.seen == 4 * calls and len(seen) == 5
    monkeypatch.setattr(watch_guards, "_works", [False])  # as on a release without the check
    plain, unmatched = _watched_table(calls)
    assert unmatched is None
    assert plain.table().groups == seen.table().groups


def test_a_matcher_keeps_no_tensor_alive() -> None:
    import gc
    import weakref

    q, k, v = (torch.randn(1, 2, 8, 16) for _ in range(3))
    mask = torch.ones(8, 8, dtype=torch.bool)
    refs = [weakref.ref(t) for t in (q, k, v, mask)]
    matches = matcher(signature(q, k, v, mask), (q, k, v, mask), {})
    del q, k, v, mask
    gc.collect()
    assert matches is not None and all(ref() is None for ref in refs)


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


def _query_part(found: tuple[Any, ...]) -> tuple[Any, ...]:
    return found[0], found[3], found[6], found[9], found[12]  # q's class, device, shape, strides, dtype


def test_a_growing_matcher_takes_exactly_the_calls_with_its_relaxed_key_and_query() -> None:
    # NOTE [ A growing cache's check ]: the same decision as the dictionary path gives through the relaxed key
    calls = _decode_calls()
    for args, kwargs in calls:
        found = signature(*args, **kwargs)
        length = found[7][-2]
        grows = growing_matcher(found, args, kwargs, [length, length])
        if found[16] is not None:
            assert grows is None  # a mask's shape follows the lengths
            continue
        assert grows is not None and grows(*args, **kwargs)
        for other_args, other_kwargs in calls:
            other = signature(*other_args, **other_kwargs)
            same = (
                relaxed(other) == relaxed(found)
                and _query_part(other) == _query_part(found)
                and (other_args[2] is other_args[1]) == (args[2] is args[1])
            )
            assert bool(grows(*other_args, **other_kwargs)) == same, (found[7], other[7], other_kwargs)


def test_a_growing_matcher_widens_its_groups_length_range_with_the_calls_it_takes() -> None:
    q = torch.randn(1, 8, 1, 16)
    k, v = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    lengths = [8, 8]
    grows = growing_matcher(signature(q, k, v), (q, k, v), {}, lengths)
    assert grows is not None
    for length in (9, 30, 5):
        assert grows(q, torch.randn(1, 2, length, 16), torch.randn(1, 2, length, 16))
    assert not grows(q, torch.randn(1, 2, 40, 16), torch.randn(1, 2, 41, 16))  # not taken: not counted in the range
    assert lengths == [5, 30]
    with sdpa_kernel([SDPBackend.MATH]):
        assert not grows(q, k, v)  # the flags are read at each call


def test_no_growing_matcher_where_the_lengths_cannot_grow_alone() -> None:
    q = torch.randn(1, 4, 8, 16)
    kv = torch.randn(1, 4, 8, 16)
    assert growing_matcher(signature(q, q, q), (q, q, q), {}, [8, 8]) is None  # k is q
    assert growing_matcher(signature(q, kv, kv), (q, kv, kv), {}, []) is None  # a group without a range
    assert growing_matcher(signature(q, kv, kv), (q, kv, kv), {}, [8, 8]) is not None
    weight = torch.nn.Parameter(torch.randn(1, 4, 8, 16))
    assert growing_matcher(signature(q, weight, kv), (q, weight, kv), {}, [8, 8]) is None  # a tensor subclass


def _decode(steps: int, layers: int, keep: int) -> tuple[Any, Any]:
    q = torch.randn(1, 4, 1, 16)
    watcher = torch_sdpa.watch(keep=keep)
    with watcher as seen:
        for length in range(8, 8 + steps):
            k, v = torch.randn(1, 2, length, 16), torch.randn(1, 2, length, 16)
            for _layer in range(layers):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        matched = watcher._match
    return seen, matched


def test_a_decode_loop_is_matched_past_its_second_step_and_counted_as_any_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = []
    real = watch_module.signature
    monkeypatch.setattr(watch_module, "signature", lambda *a, **k: built.append(1) or real(*a, **k))
    seen, matched = _decode(steps=20, layers=3, keep=4)
    assert matched is not None and matched[2] is None  # a growing matcher, for any length
    assert len(built) <= 2 + 4  # the first two steps' first calls and the kept ones: none for each later step
    [group] = seen.table().groups
    assert group.count == 60 and "k(1, 2, 8..27, 16)" in group.shapes and seen.seen == 60
    assert [c.facts.shapes[1][2] for c in seen] == [8, 8, 8, 9]  # kept calls have their own lengths
    monkeypatch.setattr(watch_guards, "_works", [False])  # as on a release without the check
    plain, unmatched = _decode(steps=20, layers=3, keep=4)
    assert unmatched is None and plain.table().groups == seen.table().groups
