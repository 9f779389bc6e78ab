"""The proof of the port: ``predict`` equals PyTorch's own choice on generated calls.

``torch._fused_sdp_choice`` is the oracle (never the implementation). The cases cover dtypes
(float64, float32, bfloat16, float16, mixed), head dims 8-512 with unequal key/value dims,
2-D to 5-D inputs, bool/float masks of every shape class (and masks requiring grad), causal,
dropout, scale, GQA, non-contiguous layouts, requires_grad with autograd on and off, and every
``sdpa_kernel`` restriction list.
"""

from __future__ import annotations

import contextlib
import inspect
from collections import Counter
from typing import Any

import pytest
import torch
from sdpa_cases import RESTRICTIONS, Case, generate, pytorch_choice
from torch.nn.attention import SDPBackend, sdpa_kernel

from inspector.dispatch import torch_sdpa
from inspector.dispatch.torch_sdpa import prediction
from inspector.dispatch.torch_sdpa.tables import predict_by_rules

CPU_CASES = 1500
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch explains its refusals as warnings


@contextlib.contextmanager
def _flags_of(case: Case):  # type: ignore[no-untyped-def]
    with contextlib.ExitStack() as stack:
        if case.restriction is not None:
            stack.enter_context(sdpa_kernel(list(case.restriction)))
        stack.enter_context(torch.set_grad_enabled(case.grad_mode))
        yield


def _mismatches(cases: list[Case], predictor: Any = None) -> tuple[list[str], Counter[SDPBackend]]:
    predictor = predictor or predict_by_rules
    wrong, outcomes = [], Counter()
    for case in cases:
        with _flags_of(case):
            want = pytorch_choice(case)
            got = predictor(*case.args, **case.kwargs)
        outcomes[want] += 1
        if got != want:
            wrong.append(f"{case!r}: PyTorch {want}, predicted {got}")
    return wrong, outcomes


def test_the_ported_rules_equal_pytorch_on_generated_cpu_calls() -> None:
    cases = generate(CPU_CASES, device="cpu")
    wrong, outcomes = _mismatches(cases)
    assert wrong == []
    # The draw exercises every outcome the CPU dispatch has, and every restriction list.
    assert {SDPBackend.FLASH_ATTENTION, SDPBackend.MATH, SDPBackend.ERROR} <= set(outcomes)
    assert min(outcomes.values()) >= 100
    assert {c.restriction for c in cases} == set(RESTRICTIONS)


def test_predict_asks_pytorch_for_plain_tensors_and_the_rules_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def counted(*args: object, **kwargs: object) -> SDPBackend:
        asked.append(1)
        return predict_by_rules(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prediction, "predict_by_rules", counted)
    wrong, _ = _mismatches(generate(300, device="cpu", seed=3), torch_sdpa.predict)
    assert wrong == []
    assert len(asked) < 30  # only calls PyTorch's own check raises on (1-D masks) reach the rules here
    q = torch.randn(2, 4, 16, 64)
    before = len(asked)
    assert torch_sdpa.predict(q, q, q, gpu="a100") == SDPBackend.EFFICIENT_ATTENTION  # float32 on an A100
    assert len(asked) == before + 1


def test_predict_takes_the_rules_for_a_mask_of_a_tensor_subclass(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    monkeypatch.setattr(prediction, "predict_by_rules", lambda *a, **k: asked.append(1) or SDPBackend.MATH)
    q, mask = torch.randn(1, 2, 8, 16), torch.nn.Parameter(torch.ones(8, 8), requires_grad=False)
    for kwargs in ({}, {"enable_gqa": True}, {"is_causal": False, "scale": 0.5}):
        assert torch_sdpa.predict(q, q, q, mask, **kwargs) == SDPBackend.MATH  # type: ignore[arg-type]
    assert len(asked) == 3  # PyTorch's check would run the subclass's __torch_function__
    assert torch_sdpa.predict(q, q, q, mask.detach()) == SDPBackend.FLASH_ATTENTION and len(asked) == 3


def test_predict_is_a_call_cpython_can_specialise() -> None:
    # NOTE [ A call CPython can specialise ]: no keyword-only parameters, *args or **kwargs
    code = torch_sdpa.predict.__code__
    assert code.co_kwonlyargcount == 0 and not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    assert list(inspect.signature(torch_sdpa.predict).parameters)[-1] == "gpu"


def test_trace_decision_equals_predict_on_generated_calls() -> None:
    for case in generate(300, device="cpu", seed=7):
        with _flags_of(case):
            trace = torch_sdpa.trace_call(*case.args, **case.kwargs)
            predicted = torch_sdpa.predict(*case.args, **case.kwargs)
        chosen = SDPBackend.ERROR if trace.chosen is None else getattr(SDPBackend, trace.chosen.upper())
        assert chosen == predicted, repr(case)


@pytest.mark.cuda
def test_the_ported_rules_equal_pytorch_on_generated_cuda_calls() -> None:
    wrong, outcomes = _mismatches(generate(CPU_CASES, device="cuda"))
    assert wrong == []
    fused = {SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION}
    assert {SDPBackend.MATH, SDPBackend.ERROR} <= set(outcomes) and len(fused & set(outcomes)) >= 2


def _pytorch_reason(case: Case) -> str | None:
    """The first reason PyTorch gives for refusing flash (it warns them when nothing else may run)."""
    import warnings

    with (
        warnings.catch_warnings(record=True) as caught,
        sdpa_kernel([SDPBackend.FLASH_ATTENTION]),
        torch.set_grad_enabled(case.grad_mode),
    ):
        warnings.simplefilter("always")
        if pytorch_choice(case) != SDPBackend.ERROR:
            return None
    texts = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    after = (
        texts[texts.index("Flash attention kernel not used because:") + 1 :]
        if "Flash attention kernel not used because:" in texts
        else []
    )
    return after[0] if after else None


def test_trace_reasons_are_pytorchs_own_words() -> None:
    compared = 0
    for case in generate(400, device="cpu", seed=11):
        reason = _pytorch_reason(case)
        if reason is None:  # flash would run, or PyTorch refuses without a word (mask requiring grad)
            continue
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]), torch.set_grad_enabled(case.grad_mode):
            row = torch_sdpa.trace_call(*case.args, **case.kwargs).row("flash_attention")
        first = row.failing[0]
        assert reason.startswith(first.message.rstrip(".")), f"{case!r}: PyTorch said {reason!r}, we said {first}"
        compared += 1
    assert compared >= 100


@pytest.mark.parametrize("devices", [("meta", "meta", "meta"), ("cpu", "meta", "meta"), ("meta", "cpu", "cpu")])
def test_predict_equals_pytorch_for_meta_and_mixed_device_calls(devices: tuple[str, str, str]) -> None:
    q, k, v = (torch.empty(2, 4, 16, 64, device=device) for device in devices)
    for restriction in RESTRICTIONS:
        case = Case(0, (q, k, v, None, 0.0, False), {}, restriction)
        with _flags_of(case):
            assert torch_sdpa.predict(q, k, v) == pytorch_choice(case), restriction


def test_predict_refuses_what_is_not_a_tensor_as_pytorch_does() -> None:
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(TypeError, match="argument 'query' \\(position 1\\) must be Tensor, not NoneType"):
        torch_sdpa.predict(None, q, q)
    with pytest.raises(TypeError, match="argument 'value' \\(position 3\\) must be Tensor, not list"):
        torch_sdpa.predict(q, q, [1])


@pytest.mark.parametrize("mask_device", ["meta", "cpu"])
def test_the_masks_device_takes_part_in_the_dispatch_as_in_pytorch(mask_device: str) -> None:
    q = torch.randn(2, 4, 16, 64)
    mask = torch.ones(16, 16, dtype=torch.bool, device=mask_device)
    want = pytorch_choice(Case(0, (q, q, q, mask, 0.0, False)))
    assert torch_sdpa.predict(q, q, q, mask) == want
    assert predict_by_rules(q, q, q, mask) == want
    assert torch_sdpa.trace_call(q, q, q, mask).chosen == want.name.lower()
    # Whether PyTorch can then run the call is PyTorch's business; the watch records its choice.
    with torch_sdpa.watch() as calls, contextlib.suppress(RuntimeError, NotImplementedError):
        torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert calls.table().groups[0].backend == want.name.lower()


@pytest.mark.cuda
def test_a_profile_of_this_gpu_answers_as_pytorch_does_on_it() -> None:
    """The same rules, fed a described GPU with this GPU's facts, give PyTorch's answer for real tensors on it."""
    real = torch_sdpa.this_gpu()
    assert real.measured and torch_sdpa.gpu_profile("this") == real
    described = torch_sdpa.gpu_profile(real.sm, cudnn=real.cudnn_version)._replace(
        cuda_version=real.cuda_version, flash_built=real.flash_built, cudnn_built=real.cudnn_built
    )
    wrong = []
    for case in generate(500, device="cuda", seed=5):
        with _flags_of(case):
            want = pytorch_choice(case)
            got = predict_by_rules(*case.args, gpu=described, **case.kwargs)
        if got != want:
            wrong.append(f"{case!r}: PyTorch {want}, the described {described.label()} {got}")
    assert wrong == []


@pytest.mark.cuda
def test_on_a_gpu_machine_cuda_means_this_gpu_and_watch_asks_pytorch() -> None:
    from inspector.dispatch import CallContext
    from inspector.dispatch.torch_sdpa.described import complete

    facts = complete(CallContext("torch_sdpa", dtype=torch.float16, device_cuda=True)).extra["sdpa"]
    assert facts.cuda is not None and facts.cuda.measured and facts.cuda.sm == torch_sdpa.this_gpu().sm
    q = torch.randn(1, 4, 64, 64, device="cuda", dtype=torch.float16)
    with torch_sdpa.watch() as calls:
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    [group] = calls.table().groups
    assert group.answered_by == "pytorch" and group.backend == torch_sdpa.predict(q, q, q, is_causal=True).name.lower()
    assert group.predicted == group.backend, "the ported CUDA rules disagree with PyTorch on this GPU"
