"""``op_backend(torch_sdpa=...)`` steers PyTorch itself, and leaves its flags exactly as found."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import ExplicitSelectionError, op_backend, torch_sdpa
from inspector.dispatch.torch_sdpa import interception
from inspector.dispatch.torch_sdpa.flags import current_flags
from inspector.dispatch.torch_sdpa.steering import TORCH_STEER

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
Q = torch.randn(2, 4, 16, 32)


def test_selection_restricts_pytorch_for_the_block_and_restores_it() -> None:
    before = current_flags()
    with op_backend(torch_sdpa="math"):
        assert torch._fused_sdp_choice(Q, Q, Q) == int(SDPBackend.MATH.value)
        assert torch_sdpa.predict(Q, Q, Q) == SDPBackend.MATH
        out = F.scaled_dot_product_attention(Q, Q, Q)
    assert current_flags() == before
    assert torch_sdpa.predict(Q, Q, Q) == SDPBackend.FLASH_ATTENTION
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, Q, Q))


def test_flags_and_sdpa_function_come_back_after_an_exception() -> None:
    before = current_flags()
    with pytest.raises(KeyError), op_backend(torch_sdpa="math"):
        raise KeyError("boom")
    assert current_flags() == before
    assert not interception.installed() and F.scaled_dot_product_attention is interception.ORIGINAL_SDPA


def test_an_incapable_selection_raises_with_pytorchs_reasons() -> None:
    with op_backend(torch_sdpa="flash_attention"), pytest.raises(ExplicitSelectionError) as exc:
        F.scaled_dot_product_attention(Q, Q, Q, dropout_p=0.1)
    assert "Both fused kernels do not support non-zero dropout" in str(exc.value)
    assert "No available kernel" not in str(exc.value)
    assert exc.value.capable == ["math"]  # under the user's own flags, not the block's restriction


def test_nn_multihead_attention_inside_the_block_is_checked_too() -> None:
    layer = torch.nn.MultiheadAttention(32, 4, dropout=0.5, batch_first=True).train()
    x = torch.randn(2, 8, 32)
    with op_backend(torch_sdpa="flash_attention"), pytest.raises(ExplicitSelectionError, match="dropout"):
        layer(x, x, x, need_weights=False)


def test_nested_blocks_restore_the_outer_selection_and_none_clears_it() -> None:
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        user = current_flags()
        with op_backend(torch_sdpa="math"):
            with op_backend(torch_sdpa="flash_attention"):
                assert current_flags()["math"] is False
            assert current_flags()["flash_attention"] is False
            with op_backend(torch_sdpa=None):
                assert current_flags() == user  # the flags from before the outermost block
            assert current_flags()["flash_attention"] is False
        assert current_flags() == user


def test_selection_by_sdpbackend_member() -> None:
    with op_backend(torch_sdpa=SDPBackend.MATH):
        assert torch_sdpa.predict(Q, Q, Q) == SDPBackend.MATH


def test_a_second_thread_with_a_different_selection_warns_and_flags_still_come_back() -> None:
    before = current_flags()
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with op_backend(torch_sdpa="flash_attention"):
            inside.set()
            release.wait(30)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with op_backend(torch_sdpa="math"):
            assert TORCH_STEER.active() == ("flash_attention", "math")
        release.set()
    thread.join(30)
    assert any("process-wide" in str(w.message) for w in caught)
    assert current_flags() == before


def test_same_selection_in_two_threads_does_not_warn() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with op_backend(torch_sdpa="math"):
            inside.set()
            release.wait(30)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(30)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with op_backend(torch_sdpa="math"):
            pass
    release.set()
    thread.join(30)


def test_asyncio_tasks_with_different_selections_warn_and_keep_the_latest_running_one() -> None:
    import asyncio

    before = current_flags()
    seen: dict[str, SDPBackend] = {}

    async def task_a(entered: asyncio.Event, a_done: asyncio.Event) -> None:
        with op_backend(torch_sdpa="math"):
            entered.set()
            await asyncio.sleep(0)
        a_done.set()

    async def task_b(entered: asyncio.Event, a_done: asyncio.Event) -> None:
        await entered.wait()
        with op_backend(torch_sdpa="flash_attention"):
            await a_done.wait()  # A's block ends while B's still runs
            seen["b"] = SDPBackend(torch._fused_sdp_choice(Q, Q, Q))

    async def main() -> None:
        entered, a_done = asyncio.Event(), asyncio.Event()
        await asyncio.gather(task_a(entered, a_done), task_b(entered, a_done))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
    assert any("another thread or task" in str(w.message) for w in caught)
    assert seen["b"] == SDPBackend.FLASH_ATTENTION  # B keeps its restriction after A's block ended
    assert current_flags() == before


def test_a_thread_block_that_ends_first_leaves_the_other_threads_selection_in_force() -> None:
    before = current_flags()
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with op_backend(torch_sdpa="math"):
            entered.set()
            release.wait(30)

    thread = threading.Thread(target=other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with op_backend(torch_sdpa="flash_attention"):
            thread.start()
            assert entered.wait(30)
        assert torch._fused_sdp_choice(Q, Q, Q) == int(SDPBackend.MATH.value)  # the other thread's block
        release.set()
        thread.join(30)
    assert current_flags() == before


@pytest.mark.parametrize("block", ["watch", "steer"])
def test_a_call_pytorch_refuses_raises_pytorchs_own_error_inside_the_blocks(block: str) -> None:
    def outcome(*args: object, **kwargs: object) -> tuple[type[BaseException], str]:
        with pytest.raises(Exception) as exc:
            F.scaled_dot_product_attention(*args, **kwargs)
        return type(exc.value), str(exc.value)

    calls = [((None, Q, Q), {}), ((Q, Q, Q), {"bogus": 1}), ((Q, Q), {})]
    expected = [outcome(*args, **kwargs) for args, kwargs in calls]
    scope = torch_sdpa.watch() if block == "watch" else op_backend(torch_sdpa="math")
    with scope as watched:
        got = [outcome(*args, **kwargs) for args, kwargs in calls]
    assert got == expected
    if block == "watch":
        # a call PyTorch refused ran no backend: it is counted as refused, with PyTorch's error
        assert [c.backend for c in watched] == ["refused"] * 3 and watched.backends() == {"refused": 3}
        for call, (_, message) in zip(watched, expected, strict=True):
            assert message.splitlines()[0][:40] in call.note
