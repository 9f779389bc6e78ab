"""``watch()`` and steered ``op_backend`` wrap whatever ``F.scaled_dot_product_attention`` is, and put it back."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

from inspector.dispatch import op_backend, torch_sdpa
from inspector.dispatch.torch_sdpa import interception

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
Q = torch.randn(1, 2, 8, 16)


class Hook:
    """A function a library or a user installs as ``F.scaled_dot_product_attention``: counts, then calls on."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner(*args, **kwargs)


@pytest.fixture
def restore_sdpa() -> Any:
    before = F.scaled_dot_product_attention
    yield
    F.scaled_dot_product_attention = before


def _blocks() -> list[Any]:
    return [lambda: torch_sdpa.watch(), lambda: op_backend(torch_sdpa="math")]


@pytest.mark.parametrize("block", _blocks(), ids=["watch", "op_backend"])
def test_a_function_installed_before_the_block_runs_inside_it_and_stays(block: Any, restore_sdpa: Any) -> None:
    hook = Hook(F.scaled_dot_product_attention)
    F.scaled_dot_product_attention = hook
    with block() as scope:
        F.scaled_dot_product_attention(Q, Q, Q)
        assert interception.wrapped() is hook
    assert hook.calls == 1 and F.scaled_dot_product_attention is hook
    if isinstance(scope, torch_sdpa.WatchedCalls):
        assert scope.seen == 1


@pytest.mark.parametrize("block", _blocks(), ids=["watch", "op_backend"])
def test_a_function_installed_during_the_block_is_kept(block: Any, restore_sdpa: Any) -> None:
    with block():
        hook = Hook(F.scaled_dot_product_attention)  # it wraps the inspector's wrapper
        F.scaled_dot_product_attention = hook
        F.scaled_dot_product_attention(Q, Q, Q)
    assert F.scaled_dot_product_attention is hook
    out = F.scaled_dot_product_attention(Q, Q, Q)  # the old wrapper now only passes calls on
    torch.testing.assert_close(out, interception.BUILTIN_SDPA(Q, Q, Q))
    with torch_sdpa.watch() as calls:  # a new block wraps the hook; the old wrapper does not loop back
        F.scaled_dot_product_attention(Q, Q, Q)
    assert calls.seen == 1 and hook.calls == 3 and F.scaled_dot_product_attention is hook


def test_nested_blocks_restore_the_users_function_once_the_last_ends(restore_sdpa: Any) -> None:
    hook = Hook(F.scaled_dot_product_attention)
    F.scaled_dot_product_attention = hook
    with torch_sdpa.watch() as outer, op_backend(torch_sdpa="math"):
        with torch_sdpa.watch() as inner:
            F.scaled_dot_product_attention(Q, Q, Q)
        assert interception.installed()
    assert F.scaled_dot_product_attention is hook and (outer.seen, inner.seen, hook.calls) == (1, 1, 1)


def test_a_patched_native_fast_path_is_wrapped_and_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "_transformer_encoder_layer_fwd"
    hook = Hook(getattr(torch, name))
    monkeypatch.setattr(torch, name, hook)
    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True).eval()
    with torch.inference_mode(), torch_sdpa.watch() as calls:
        layer(torch.randn(2, 8, 32))
    assert getattr(torch, name) is hook and hook.calls == 1 and calls.backends() == {"native fast path": 1}


def test_a_replaced_handler_runs_in_its_place_and_is_the_one_removed(restore_sdpa: Any) -> None:
    ran: list[str] = []

    def handler(name: str) -> Any:
        return lambda call, args, kwargs: ran.append(name) or call(*args, **kwargs)

    outer, old, new = handler("outer"), handler("old"), handler("new")
    interception.add(outer)
    interception.add(old)
    try:
        interception.replace(old, new)
        interception.replace(old, handler("never"))  # old runs no more: nothing to replace
        F.scaled_dot_product_attention(Q, Q, Q)
        assert ran == ["outer", "new"]
    finally:
        interception.remove(new)
        interception.remove(outer)
    assert not interception.installed()
