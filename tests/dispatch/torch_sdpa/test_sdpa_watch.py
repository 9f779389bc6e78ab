"""``watch()`` records what PyTorch ran in a real model, without changing its results."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import torch_sdpa
from inspector.dispatch.torch_sdpa import interception

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _layer(dropout: float) -> torch.nn.TransformerEncoderLayer:
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=dropout,
                                            batch_first=True)


def test_watch_records_a_transformer_layers_calls_with_pytorchs_choice() -> None:
    layer, x = _layer(0.1).train(), torch.randn(2, 10, 64)
    with torch_sdpa.watch() as calls:
        layer(x)
    [call] = calls.calls
    assert call.backend == "math" and call.answered_by == "pytorch" and call.predicted == "math"
    assert call.shapes == ((2, 4, 10, 16),) * 3 and call.dtype == "float32" and call.dropout_p == 0.1
    [(name, why)] = call.rejected
    assert name == "flash_attention" and "non-zero dropout" in why


def test_watch_leaves_results_unchanged() -> None:
    layer, x = _layer(0.0).train(), torch.randn(2, 10, 64)
    expected = layer(x)
    with torch_sdpa.watch() as calls:
        got = layer(x)
    torch.testing.assert_close(got, expected)
    assert calls.backends() == {"flash_attention": 1}
    assert not interception.installed()


def test_watch_says_when_a_native_fast_path_hides_the_choice() -> None:
    layer, x = _layer(0.0).eval(), torch.randn(2, 10, 64)
    with torch.inference_mode(), torch_sdpa.watch() as calls:
        layer(x)
    [call] = calls.calls
    assert call.backend == "native fast path" and "_transformer_encoder_layer_fwd" in call.note


def test_watch_table_groups_by_backend_dtype_and_shapes() -> None:
    q, half = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch() as calls:
        for _ in range(3):
            F.scaled_dot_product_attention(q, q, q)
        F.scaled_dot_product_attention(half, half, half, dropout_p=0.5)
    table = calls.table()
    assert [(g.backend, g.count) for g in table.groups] == [("flash_attention", 3), ("math", 1)]
    assert "non-zero dropout" in table.groups[1].rejected
    assert "<table" in table._repr_html_() and "flash_attention" in repr(table)
    frame = table.to_frame()
    assert list(frame["count"]) == [3, 1]
    assert repr(calls) == "<WatchedCalls: 4 SDPA call(s): flash_attention x3, math x1>"


def test_watch_emits_profiler_ranges_named_after_the_backend() -> None:
    q = torch.randn(1, 2, 8, 16)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof, torch_sdpa.watch():
        F.scaled_dot_product_attention(q, q, q)
    assert any(event.name == "torch_sdpa:flash_attention" for event in prof.events())


def test_watch_records_a_refused_call_and_lets_pytorch_raise() -> None:
    q = torch.randn(2, 8, 16)  # 3-D: flash cannot take it
    with torch_sdpa.watch() as calls, sdpa_kernel([SDPBackend.FLASH_ATTENTION]), pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, q, q)
    assert calls[0].backend == "error" and calls[0].predicted == "error"


def test_watch_ignores_other_threads() -> None:
    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch() as calls:
        thread = threading.Thread(target=lambda: F.scaled_dot_product_attention(q, q, q))
        thread.start()
        thread.join(30)
        F.scaled_dot_product_attention(q, q, q)
    assert len(calls) == 1


def test_watch_limit_bounds_memory() -> None:
    q = torch.randn(1, 2, 8, 16)
    watcher = torch_sdpa.watch(limit=2)
    with watcher as calls:
        for _ in range(5):
            F.scaled_dot_product_attention(q, q, q)
    assert len(calls) == 2 and watcher.dropped == 3
    with pytest.raises(ValueError, match="positive int"):
        torch_sdpa.watch(limit=0)


def test_prebound_references_are_seen_only_when_asked_and_never_twice() -> None:
    from torch.nn.functional import scaled_dot_product_attention as bound_before

    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch() as plain:
        bound_before(q, q, q)
    assert len(plain) == 0  # a reference taken before the block bypasses the module attribute
    with torch_sdpa.watch(prebound=True) as calls:
        out = bound_before(q, q, q, dropout_p=0.0)
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.5, is_causal=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, q, q))
    assert [c.backend for c in calls] == ["flash_attention", "math"]  # each call once
    assert not torch.overrides._is_torch_function_mode_enabled()  # the mode left with the block


def test_prebound_watch_sees_the_encoder_layers_python_path() -> None:
    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True).eval()
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        expected = layer(x)
        with torch_sdpa.watch(prebound=True) as calls:
            got = layer(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert [c.backend for c in calls] == ["flash_attention"]  # the fast path is off: the SDPA call is visible
