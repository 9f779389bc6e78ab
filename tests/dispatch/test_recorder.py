from __future__ import annotations

import torch

from inspector.dispatch import CallContext, DecisionRecorder, op_backend, record_decisions, resolve, trace

BF16, F32 = torch.bfloat16, torch.float32


def test_recorder_is_opt_in(toy: str) -> None:
    recorder = DecisionRecorder(maxlen=10)
    resolve(toy, CallContext(toy))
    assert recorder.decisions() == () and not recorder.recording


def test_recorder_keeps_the_decisions_resolve_took(toy: str) -> None:
    with record_decisions(maxlen=10) as recorder:
        resolve(toy, CallContext(toy, dtype=BF16))
        with op_backend(toy="beta"):
            resolve(toy, CallContext(toy, dtype=BF16))
    resolve(toy, CallContext(toy))  # after stop: not recorded
    assert [(d.family, d.row, d.origin) for d in recorder.decisions()] == [
        ("toy", "alpha", "chain"),
        ("toy", "beta", "context"),
    ]
    assert recorder.total == 2


def test_recorder_is_bounded_and_counts_what_it_keeps(toy: str) -> None:
    with record_decisions(maxlen=3) as recorder:
        for dtype in (BF16, BF16, F32, F32, F32):
            resolve(toy, CallContext(toy, dtype=dtype))
    assert len(recorder.decisions()) == 3 and recorder.total == 5
    assert [(c.row, c.count) for c in recorder.counts()] == [("beta", 3)]
    recorder.clear()
    assert recorder.decisions() == () and recorder.total == 0


def test_recorded_contexts_do_not_keep_tensors_alive(toy: str) -> None:
    with record_decisions() as recorder:
        resolve(toy, CallContext(toy, raw=(torch.zeros(1000),)))
    (decision,) = recorder.decisions()
    assert decision.context.raw == ()


def test_tracing_is_not_recorded_as_a_decision(toy: str) -> None:
    with record_decisions() as recorder:
        trace(toy, CallContext(toy))
    assert recorder.decisions() == ()
