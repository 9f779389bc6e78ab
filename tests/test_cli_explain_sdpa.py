"""``inspector explain torch_sdpa``: any GPU from this CPU machine, ``--time``, and strictly read ``--extra`` values."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_explain import invoke

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _chosen(*args: str) -> str:
    result = invoke("explain", "torch_sdpa", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1].strip()


@pytest.mark.parametrize(
    ("args", "backend"),
    [
        (("--gpu", "t4", "--dtype", "fp16"), "efficient_attention"),
        (("--gpu", "t4", "--dtype", "bf16"), "math"),
        (("--gpu", "a100", "--dtype", "bf16"), "flash_attention"),
        (("--gpu", "a100", "--dtype", "fp32"), "efficient_attention"),
        (("--gpu", "a100", "--dtype", "bf16", "--mask"), "efficient_attention"),
        (("--gpu", "h100", "--dtype", "bf16"), "cudnn_attention"),  # cuDNN first on sm 9.0 with cuDNN > 9.15
        (("--gpu", "h100", "--cudnn", "9.8.0", "--dtype", "bf16"), "flash_attention"),
        (("--gpu", "4090", "--dtype", "bf16", "--head-dim", "200"), "efficient_attention"),  # training, sm 8.9
        (("--gpu", "4090", "--dtype", "bf16", "--head-dim", "200", "--no-grad"), "flash_attention"),
        (("--gpu", "sm75", "--dtype", "fp16"), "efficient_attention"),
        (("--extra", "enabled=math"), "math"),  # the enable flags, as sdpa_kernel([MATH]) would set them
        (("--gpu", "a100", "--dtype", "fp16", "--extra", "enabled=efficient_attention+math"), "efficient_attention"),
    ],
)
def test_any_gpu_is_answered_from_this_machine(args: tuple[str, ...], backend: str) -> None:
    assert _chosen(*args) == f"=> {backend} (origin=chain)"


def test_every_gpu_answer_is_labelled_as_pytorchs_rules_not_a_measurement() -> None:
    out = invoke("explain", "torch_sdpa", "--gpu", "h100", "--dtype", "bf16").stdout
    assert "note: PyTorch's rules for H100 (sm 9.0, cuDNN 9.15.1, CUDA 13.0), not measured here" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--gpu", "h10"), "Unknown GPU 'h10'. Did you mean 'h100'?"),
        (("--gpu", "sm99x"), "Presets: t4 (sm 7.5)"),
        (("--cudnn", "nine", "--gpu", "a100"), "--cudnn nine: cudnn='nine'"),
        (("--gpu", "h100", "--time"), "this machine does not have that GPU"),
        (("--extra", "enabled=flsh"), "axis enabled='flsh': no backend 'flsh'"),
        (("--extra", "gpu=h100"), None),
    ],
)
def test_bad_gpu_usage_is_one_line(args: tuple[str, ...], fragment: str | None) -> None:
    result = invoke("explain", "torch_sdpa", *args)
    if fragment is None:  # the axis itself works too
        assert result.returncode == 0 and "H100" in result.stdout
        return
    assert result.returncode == 2 and fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_gpu_is_refused_for_other_families() -> None:
    result = invoke("explain", "rotary", "--gpu", "h100")
    assert result.returncode == 2 and "only the torch_sdpa family reads it" in result.stderr


def test_time_runs_every_backend_that_can_serve_the_call_on_this_cpu() -> None:
    result = invoke("explain", "torch_sdpa", "--extra", "seq_len=16", "--head-dim", "16", "--time", "--budget", "0.05")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "torch_sdpa.compare:" in out and "PyTorch picks flash_attention" in out
    assert "  flash_attention: forward" in out and "  math: forward" in out and "backward" in out
    assert "  efficient_attention: cannot serve (PyTorch's CPU dispatch has no efficient_attention kernel" in out
    payload = json.loads(
        invoke(
            "explain",
            "torch_sdpa",
            "--extra",
            "seq_len=8",
            "--head-dim",
            "8",
            "--no-grad",
            "--time",
            "--budget",
            "0.05",
            "--json",
        ).stdout
    )
    assert payload["compare"]["pick"] == "flash_attention"
    assert {b["backend"] for b in payload["compare"]["backends"] if b["status"] == "ran"} == {"flash_attention", "math"}


def test_time_is_refused_for_other_families_and_bad_budgets() -> None:
    assert "describes the torch_sdpa family" in invoke("explain", "rotary", "--time").stderr
    result = invoke("explain", "torch_sdpa", "--time", "--budget", "0")
    assert result.returncode == 2 and "above 0" in result.stderr


_TEXT = st.text(
    alphabet=st.characters(blacklist_characters=",=\n\r\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(lambda t: t.strip() != "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    axis=st.sampled_from(["enable_gqa", "requires_grad"]),
    text=_TEXT | st.sampled_from(["true", "FALSE", "True", "no", "off", "yes", "0", "1", "none", "None", " true "]),
)
def test_booleans_accept_only_true_false_and_none_where_it_means_autograd(axis: str, text: str) -> None:
    result = invoke("explain", "torch_sdpa", "--extra", f"{axis}={text}")
    spelled = text.strip().lower()
    accepted = {"true", "false"} | ({"none"} if axis == "requires_grad" else set())
    if spelled in accepted:
        assert result.returncode == 0, result.stderr
        shown = {"true": "True", "false": "False", "none": "None"}[spelled]
        assert f"{axis}={shown}" in result.stdout.splitlines()[0]
    else:
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
        assert f"axis {axis}=" in result.stderr and "give true" in result.stderr and "false" in result.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT | st.sampled_from(["bool", "float16", "torch.bfloat16", "nn", "xyz", "half", "Tensor", "float"]))
def test_mask_dtypes_are_real_dtype_names_only(text: str) -> None:
    result = invoke("explain", "torch_sdpa", "--mask", "--extra", f"mask_dtype={text}")
    name = text.strip().removeprefix("torch.")
    real = name.isidentifier() and isinstance(getattr(torch, name, None), torch.dtype)
    if real:
        assert result.returncode in (0, 1), result.stderr
        assert f"{getattr(torch, name)}".removeprefix("torch.") in result.stdout.splitlines()[0]
    else:
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
        assert "axis mask_dtype=" in result.stderr and "give a dtype name such as bool" in result.stderr


def test_time_refuses_a_call_too_big_for_this_machine_before_allocating_it() -> None:
    result = invoke("explain", "torch_sdpa", "--extra", "seq_len=200000", "--extra", "kv_len=200000", "--time")
    assert result.returncode == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line and "would allocate about" in line
    assert "smaller --extra seq_len=" in line and "drop --time" in line
