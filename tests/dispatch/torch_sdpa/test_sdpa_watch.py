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
