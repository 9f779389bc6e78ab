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
from inspector.dispatch.torch_sdpa.watch_guards import matcher
from inspector.dispatch.torch_sdpa.watch_keys import signature

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
