"""``watch()`` records what PyTorch ran in a real model, without changing its results, in bounded memory."""

from __future__ import annotations

import csv
import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import torch_sdpa
from inspector.dispatch.torch_sdpa import interception
from inspector.dispatch.torch_sdpa.bench_model import LlamaConfig, LlamaStyle
from inspector.dispatch.torch_sdpa.watch_records import NOTHING_SEEN
from inspector.dispatch.torch_sdpa.watch_table import COLUMNS, WatchTable

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _layer(dropout: float) -> torch.nn.TransformerEncoderLayer:
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=dropout, batch_first=True)


def _small_llama() -> LlamaStyle:
    torch.manual_seed(0)
    return LlamaStyle(LlamaConfig(vocab=64, dim=64, layers=2, heads=4, kv_heads=2, hidden=96, max_len=64)).eval()


def test_watch_records_a_transformer_layers_calls_with_pytorchs_choice() -> None:
    layer, x = _layer(0.1).train(), torch.randn(2, 10, 64)
    with torch_sdpa.watch() as calls:
        layer(x)
    [call] = calls.calls
    assert call.backend == "math" and call.answered_by == "pytorch" and call.predicted == "math"
    assert call.shapes == ((2, 4, 10, 16),) * 3 and call.dtype == "float32" and call.dropout_p == 0.1
    [(name, why)] = call.rejected
    assert name == "flash_attention" and "non-zero dropout" in why
    assert call.module == "self_attn"  # the MultiheadAttention inside the layer that was called


def test_watch_leaves_results_unchanged() -> None:
    layer, x = _layer(0.0).train(), torch.randn(2, 10, 64)
    expected = layer(x)
    with torch_sdpa.watch() as calls:
        got = layer(x)
    torch.testing.assert_close(got, expected)
    assert calls.backends() == {"flash_attention": 1}
    assert not interception.installed()


def test_watch_names_the_module_that_took_a_native_fast_path() -> None:
    layer, x = _layer(0.0).eval(), torch.randn(2, 10, 64)
    with torch.inference_mode(), torch_sdpa.watch() as calls:
        layer(x)
    [call] = calls.calls
    assert call.backend == "native fast path" and "_transformer_encoder_layer_fwd" in call.note
    assert call.module == "TransformerEncoderLayer"
    [group] = calls.table().groups
    assert group.module == "TransformerEncoderLayer" and group.count == 1


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
    assert list(frame["count"]) == [3, 1] and list(frame.columns) == COLUMNS
    assert repr(calls) == "<WatchedCalls: 4 SDPA call(s) seen (all kept): flash_attention x3, math x1>"


def test_the_table_has_the_options_and_flags_as_columns_and_a_next_step() -> None:
    q = torch.randn(1, 2, 8, 16, requires_grad=True)
    mask = torch.zeros(8, 8)
    with torch_sdpa.watch() as calls, sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.25, attn_mask=mask)
    [group] = calls.table().groups
    assert (group.backend, group.dropout_p, group.causal, group.grad) == ("math", 0.25, False, True)
    assert group.mask == "(8, 8) float32" and group.enabled == "flash_attention, math"
    assert (
        group.next_step == "to get flash_attention here: set dropout_p=0 (the module's eval(), or attention dropout 0)"
    )


def test_a_next_step_for_grouped_query_heads_names_enable_gqa() -> None:
    q, kv = torch.randn(1, 8, 16, 32), torch.randn(1, 1, 16, 32)  # one key/value head, broadcast by math
    with torch_sdpa.watch() as calls:
        F.scaled_dot_product_attention(q, kv, kv)
    [group] = calls.table().groups
    assert group.backend == "math" and "pass enable_gqa=True" in group.next_step


def test_a_llama_style_model_is_one_group_per_kind_of_call_with_module_paths() -> None:
    model, ids = _small_llama(), torch.randint(0, 64, (1, 12))
    with torch.no_grad(), torch_sdpa.watch() as calls:
        caches = model.new_caches()
        model(ids, caches)  # prefill: causal, 12 tokens
        for _step in range(5):  # decode: one token against a growing cache
            model(ids[:, :1], caches)
    groups = calls.table().groups
    assert calls.seen == 2 * 6 and len(groups) == 2
    prefill, decode = sorted(groups, key=lambda g: g.causal is False)
    assert prefill.causal and prefill.count == 2
    assert prefill.module == "model.layers.0.self_attn, model.layers.1.self_attn"
    assert not decode.causal and decode.count == 10
    assert "k(1, 2, 13..17, 16)" in decode.shapes  # the cache's length as a range, in one group
    assert all(g.backend == "flash_attention" and g.answered_by == "pytorch" for g in groups)
    assert calls[0].module == "model.layers.0.self_attn" and calls[1].module == "model.layers.1.self_attn"


def test_module_paths_keep_their_index_and_collapse_only_many_layers() -> None:
    from inspector.dispatch.torch_sdpa.modules import summarise

    model = LlamaStyle(LlamaConfig(vocab=64, dim=64, layers=6, heads=4, kv_heads=2, hidden=96, max_len=64))
    ids = torch.randint(0, 64, (1, 8))
    with torch.no_grad(), torch_sdpa.watch() as calls:
        model(ids)
    assert [c.module for c in calls] == [f"model.layers.{i}.self_attn" for i in range(6)]
    assert calls.table().groups[0].module == "model.layers.{0..5}.self_attn"
    assert summarise(["model.layers.1.self_attn"]) == "model.layers.1.self_attn"
    assert summarise(["b.10.attn", "b.2.attn"]) == "b.2.attn, b.10.attn"
    assert summarise([f"b.{i}.attn" for i in (0, 1, 5, 7)]) == "b.{0,1,5,7}.attn"


def test_the_stack_is_walked_for_a_models_first_calls_only() -> None:
    import importlib

    lookups = importlib.import_module("inspector.dispatch.torch_sdpa.watch").MODULE_LOOKUPS
    model, ids = _small_llama(), torch.randint(0, 64, (1, 4))
    with torch.no_grad(), torch_sdpa.watch() as calls:
        caches = model.new_caches()
        model(ids, caches)
        for _step in range(lookups // 2 + 4):  # two layers a step: past the calls the stack is walked for
            model(ids[:, :1], caches)
    assert len(calls) == calls.seen == 2 * (lookups // 2 + 5)
    assert [c.module for c in calls[:lookups]] == ["model.layers.0.self_attn", "model.layers.1.self_attn"] * (
        lookups // 2
    )
    assert {c.module for c in calls[lookups:]} == {""}  # kept, counted and decided, but not walked for
    assert all(g.module == "model.layers.0.self_attn, model.layers.1.self_attn" for g in calls.table().groups)


def test_every_printed_line_tells_its_group_apart() -> None:
    q, mask = torch.randn(1, 2, 8, 16), torch.ones(8, 8, dtype=torch.bool)
    with torch_sdpa.watch() as calls:
        F.scaled_dot_product_attention(q, q, q)
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        F.scaled_dot_product_attention(q.clone().requires_grad_(), q, q)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            F.scaled_dot_product_attention(q, q, q)
        kv = torch.randn(1, 1, 8, 16)
        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
    lines = repr(calls.table()).splitlines()[1:]
    assert len(lines) == len(calls.table().groups) == 6 and len(set(lines)) == 6
    assert any(line.endswith(" causal") for line in lines) and any("mask (8, 8) bool" in line for line in lines)
    assert any(line.endswith(" grad") for line in lines) and any("enabled: flash_attention" in line for line in lines)
    group = calls.table().groups[0]
    twins = dataclasses.replace(group, answered_by="inspector"), dataclasses.replace(group, count=3)
    lines = repr(WatchTable(twins, 4, 4)).splitlines()[1:]
    assert len(set(lines)) == 2 and "(answered by: inspector)" in lines[0]
    lines = repr(WatchTable((group, group), 2, 2)).splitlines()[1:]
    assert lines[0].endswith("(kind 1)") and lines[1].endswith("(kind 2)")


def test_counts_go_on_past_the_calls_kept_in_full() -> None:
    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch(keep=2) as calls:
        for _ in range(5):
            F.scaled_dot_product_attention(q, q, q)
    assert len(calls) == 2 and calls.seen == 5 and calls.dropped == 3
    assert calls.backends() == {"flash_attention": 5}
    assert repr(calls) == "<WatchedCalls: 5 SDPA call(s) seen (first 2 kept): flash_attention x5>"
    table = calls.table()
    assert (table.seen, table.kept, table.groups[0].count) == (5, 2, 5)
    assert "5 SDPA call(s) seen" in repr(table) and "5 SDPA call(s) seen, the first 2 kept" in table._repr_html_()
    assert torch_sdpa.last_watch() is calls
    with pytest.raises(ValueError, match="whole number >= 0"):
        torch_sdpa.watch(keep=-1)


def test_native_fast_path_calls_past_the_limit_are_counted() -> None:
    layer, x = _layer(0.0).eval(), torch.randn(2, 10, 64)
    with torch.inference_mode(), torch_sdpa.watch(keep=1) as calls:
        for _ in range(4):
            layer(x)
    assert (len(calls), calls.seen) == (1, 4) and calls.table().groups[0].count == 4


def test_nothing_seen_says_why_and_what_to_do() -> None:
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True)
    x = torch.randn(2, 8, 32)
    with torch_sdpa.watch() as calls:
        mha(x, x, x, need_weights=True)  # computes the weights itself: no SDPA call
    assert calls.seen == 0 and "need_weights=True" in repr(calls.table()) and "prebound=True" in NOTHING_SEEN
    assert "no SDPA call seen" in repr(calls) and "need_weights=True" in calls._repr_html_()


def test_to_csv_writes_every_group(tmp_path: Path) -> None:
    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch() as calls:
        F.scaled_dot_product_attention(q, q, q)
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    path = calls.to_csv(tmp_path / "watch.csv")
    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    assert [r["backend"] for r in rows] == ["flash_attention", "math"] and list(rows[0]) == COLUMNS
    assert rows[1]["dropout_p"] == "0.5" and rows[0]["count"] == "1"


def test_repeated_calls_share_one_group_and_the_signature_cache_ends_with_the_block() -> None:
    watcher = torch_sdpa.watch(keep=10)
    q = torch.randn(1, 1, 2, 4)
    with watcher as calls:
        key_call = (q, q, q)
        for _ in range(50):
            F.scaled_dot_product_attention(*key_call)
    assert len(watcher._slots) == 0 and len(calls._groups) == 1 and len(calls.calls) == 10


def test_watch_emits_profiler_ranges_named_after_the_backend() -> None:
    q = torch.randn(1, 2, 8, 16)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof, torch_sdpa.watch():
        F.scaled_dot_product_attention(q, q, q)
    assert any(event.name == "torch_sdpa:flash_attention" for event in prof.events())


def test_watch_records_a_refused_call_and_lets_pytorch_raise() -> None:
    q = torch.randn(2, 8, 16)  # 3-D: flash cannot take it
    with torch_sdpa.watch() as calls, sdpa_kernel([SDPBackend.FLASH_ATTENTION]), pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, q, q)
    assert calls[0].backend == "refused" and calls[0].predicted == "error" and calls.backends() == {"refused": 1}
    assert "No available kernel" in calls[0].note and "No available kernel" in calls.table().groups[0].note


def test_a_call_the_kernel_refuses_is_counted_as_refused_not_as_the_backend_chosen() -> None:
    q, k = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16, dtype=torch.float64)
    with torch_sdpa.watch() as calls:
        for _ in range(3):
            with pytest.raises(RuntimeError, match="same dtype"):
                F.scaled_dot_product_attention(q, k, k)  # PyTorch's check says math; the math kernel raises
        F.scaled_dot_product_attention(q, q, q)
    assert calls.backends() == {"refused": 3, "flash_attention": 1}
    refused = [g for g in calls.table().groups if g.backend == "refused"]
    assert len(refused) == 1 and refused[0].count == 3 and "same dtype" in refused[0].note
    assert [c.backend for c in calls] == ["refused"] * 3 + ["flash_attention"]


def test_a_growing_cache_asks_pytorch_again_but_keeps_each_calls_own_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    watch_module = importlib.import_module("inspector.dispatch.torch_sdpa.watch")  # the module, not the class
    decided = []
    real = watch_module._decide
    monkeypatch.setattr(watch_module, "_decide", lambda *a: decided.append(1) or real(*a))
    q = torch.randn(1, 4, 1, 16)
    with torch_sdpa.watch() as calls:
        for length in range(8, 20):
            kv = torch.randn(1, 4, length, 16)
            F.scaled_dot_product_attention(q, kv, kv)
        F.scaled_dot_product_attention(q, kv, kv, dropout_p=0.5)  # another answer: decided afresh
    assert len(decided) == 2  # the first length, and the dropout call; every other length joined it
    [decode, dropout] = calls.table().groups
    assert decode.count == 12 and "k(1, 4, 8..19, 16)" in decode.shapes and dropout.backend == "math"
    assert [c.shapes[1][2] for c in calls[:12]] == list(range(8, 20))  # each kept call's own length
    assert "seq_len_kv" not in calls[5].trace.rows[0].failing  # its own trace, from its own facts
    assert calls[5].facts.shapes[1] == (1, 4, 13, 16) and calls[5].trace.chosen == "flash_attention"


def test_watch_ignores_other_threads() -> None:
    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch() as calls:
        thread = threading.Thread(target=lambda: F.scaled_dot_product_attention(q, q, q))
        thread.start()
        thread.join(30)
        F.scaled_dot_product_attention(q, q, q)
    assert len(calls) == 1 and calls.seen == 1


def test_a_disagreement_between_pytorch_and_the_rules_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspector.dispatch.torch_sdpa import watch_records

    q = torch.randn(1, 2, 8, 16)
    with torch_sdpa.watch() as calls:
        F.scaled_dot_product_attention(q, q, q)
    decision = calls[0]._decision
    decision._predicted = "math"  # as if the ported rules said otherwise
    assert calls.table().groups[0].note == "the inspector's rules predicted math; PyTorch chose flash_attention"
    assert watch_records.Decision("x", "inspector", None).full_note() == ""


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


def test_a_groups_length_ranges_widen_both_ways() -> None:
    from inspector.dispatch.torch_sdpa.watch_records import Decision, Group

    group = Group(Decision("math", "pytorch", None), 0)
    for q_len, kv_len in ((8, 20), (4, 30), (6, 10), (9, 25)):
        group.widen((1, 2, q_len, 16), (1, 2, kv_len, 16))
    group.widen((16,), (16,))  # no length dimension: nothing to widen
    assert (group.q_lens, group.kv_lens) == ([4, 9], [10, 30])


def _length_grid_cases() -> list[tuple[str, Any]]:
    """Calls as functions of (q_len, kv_len): every kind of thing PyTorch's CPU checks read."""
    gen = torch.Generator().manual_seed(0)

    def t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(dtype)

    def bool_mask(*shape: int) -> torch.Tensor:
        return torch.ones(*shape, dtype=torch.bool)

    return [
        ("plain", lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k, 16)), {})),
        ("causal", lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k, 16)), {"is_causal": True})),
        ("gqa", lambda q, k: ((t(1, 4, q, 16), t(1, 2, k, 16), t(1, 2, k, 16)), {"enable_gqa": True})),
        ("dropout", lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k, 16)), {"dropout_p": 0.5})),
        (
            "float64",
            lambda q, k: (
                (t(1, 4, q, 16, dtype=torch.float64),) * 3
                if q == k
                else (
                    t(1, 4, q, 16, dtype=torch.float64),
                    t(1, 4, k, 16, dtype=torch.float64),
                    t(1, 4, k, 16, dtype=torch.float64),
                ),
                {},
            ),
        ),
        ("transposed q", lambda q, k: ((t(1, q, 4, 16).transpose(1, 2), t(1, 4, k, 16), t(1, 4, k, 16)), {})),
        ("3-D", lambda q, k: ((t(4, q, 16), t(4, k, 16), t(4, k, 16)), {})),
        (
            "mask q x kv",
            lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k, 16)), {"attn_mask": bool_mask(q, k)}),
        ),
        (
            "mask 1 x kv",
            lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k, 16)), {"attn_mask": bool_mask(1, k)}),
        ),
        ("mask q x 1", lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k, 16)), {"attn_mask": t(q, 1)})),
        (
            "mask 4-D",
            lambda q, k: ((t(2, 4, q, 16), t(2, 4, k, 16), t(2, 4, k, 16)), {"attn_mask": bool_mask(2, 1, q, k)}),
        ),
        (
            "mask fixed 8 x 8",
            lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k, 16)), {"attn_mask": bool_mask(8, 8)}),
        ),
        ("value longer", lambda q, k: ((t(1, 4, q, 16), t(1, 4, k, 16), t(1, 4, k + 1, 16)), {})),
    ]


@pytest.mark.parametrize("flash_only", [False, True])
def test_on_the_cpu_every_length_of_a_relaxed_key_gets_pytorchs_own_answer(
    monkeypatch: pytest.MonkeyPatch,
    flash_only: bool,
) -> None:
    # NOTE [ Growing sequences ]: on a tested release the CPU answer is reused across lengths;
    # this grid holds each call's answer to PyTorch's own (torch._fused_sdp_choice, through predict).
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **k: None)  # only the choices matter
    lengths = [(q, k) for q in (0, 1, 3, 8) for k in (0, 1, 3, 8, 9)]
    allowed = [SDPBackend.FLASH_ATTENTION] if flash_only else [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
    for name, make in _length_grid_cases():
        calls = [make(q, k) for q, k in lengths]
        with sdpa_kernel(allowed), torch_sdpa.watch(keep=len(calls)) as seen:
            for args, kwargs in calls:
                F.scaled_dot_product_attention(*args, **kwargs)
            expected = [torch_sdpa.predict(*args, **kwargs).name.lower() for args, kwargs in calls]
        assert [c.backend for c in seen] == expected, name


def test_the_whole_stack_is_walked_once_per_model_not_once_per_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspector.dispatch.torch_sdpa import modules

    walked = []
    real = modules._module_of
    monkeypatch.setattr(modules, "_module_of", lambda frame: walked.append(1) or real(frame))

    def frames_read(layers: int) -> int:
        walked.clear()
        model = LlamaStyle(LlamaConfig(vocab=64, dim=64, layers=layers, heads=4, kv_heads=2, hidden=96, max_len=64))
        with torch.no_grad(), torch_sdpa.watch() as calls:
            model(torch.randint(0, 64, (1, 8)))
            model(torch.randint(0, 64, (1, 8)))
        assert [c.module for c in calls] == [f"model.layers.{i}.self_attn" for i in range(layers)] * 2
        return len(walked)

    assert frames_read(1) > 0 and frames_read(4) == frames_read(1)  # layers 1-3: named from layer 0's model
