"""``inspector explain`` for PyTorch's own family and the user's code: --causal, aliases, --import, typos."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.cli import main

USER_FAMILY = """
from inspector.dispatch import ImplRecord, Spec, register_family

def fast(*a): ...
def slow(*a): ...

register_family("attention", [ImplRecord("attention", "mine", fast, Spec.causal(), priority=0),
                              ImplRecord("attention", "plain", slow, Spec.always(), priority=1)], "plain")
"""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, in a fresh process (what users run)."""
    return subprocess.run(
        [sys.executable, "-m", "inspector", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def invoke(*args: str) -> subprocess.CompletedProcess[str]:
    """The same ``main`` in this process: the cheap way to drive many invocations."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_explain_torch_sdpa_says_what_pytorch_runs_on_this_cpu() -> None:
    result = run("explain", "torch_sdpa", "--dtype", "bf16", "--head-dim", "128")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("=> flash_attention (origin=chain)")
    dropout = invoke("explain", "torch_sdpa", "--extra", "dropout_p=0.1")
    assert "non-zero dropout" in dropout.stdout and dropout.stdout.strip().endswith("=> math (origin=chain)")


@pytest.mark.parametrize(
    ("alias", "name"),
    [("bf16", "bfloat16"), ("fp16", "float16"), ("fp32", "float32"), ("half", "float16"), ("FP64", "float64")],
)
def test_dtype_aliases(alias: str, name: str) -> None:
    result = invoke("explain", "rotary", "--dtype", alias, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["context"]["dtype"] == name


def test_causal_is_an_axis_of_its_own() -> None:
    result = invoke("explain", "torch_sdpa", "--causal", "--json")
    context = json.loads(result.stdout)["context"]
    assert context["causal"] is True and context["has_mask"] is False


def test_import_loads_the_users_family_which_the_demo_never_replaces(tmp_path: Path) -> None:
    (tmp_path / "my_kernels.py").write_text(USER_FAMILY)
    result = run("explain", "attention", "--causal", "--import", "my_kernels", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "mine: MATCH" in result.stdout and result.stdout.strip().endswith("=> mine (origin=chain)")
    assert "flash" not in result.stdout  # the demo's rows are not there


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("explain", "atention"), "Did you mean 'attention'?"),
        (("explain", "torch_spda"), "Did you mean 'torch_sdpa'?"),
        (("explain", "attention", "--select", "mth"), "Did you mean 'math'?"),
        (("explain", "torch_sdpa", "--select", "flash"), "Did you mean 'flash_attention'?"),
        (("explain", "attention", "--extra", "kv_len=abc"), "--extra kv_len=abc"),
        (("explain", "torch_sdpa", "--extra", "dropout=0.1"), "Axes in extra"),
        (("explain", "torch_sdpa", "--cuda"), "no CUDA device"),
        (("explain", "rotary", "--import", "no_such_module_here"), "No module named 'no_such_module_here'"),
    ],
)
def test_bad_explain_usage_exits_two_with_one_line(args: tuple[str, ...], fragment: str) -> None:
    result = invoke(*args)
    assert result.returncode == 2, result.stdout
    assert fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_report_imports_the_users_module_first(tmp_path: Path) -> None:
    (tmp_path / "my_kernels.py").write_text(USER_FAMILY)
    result = run("report", str(tmp_path / "report.html"), "--import", "my_kernels", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "mine" in text and "quantized" not in text  # the user's attention family, and no demo over it


def test_lab_passes_the_users_modules_to_every_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from inspector._user_modules import IMPORT_ENV, import_user_modules

    (tmp_path / "my_lab_kernels.py").write_text(USER_FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(IMPORT_ENV, "my_lab_kernels, missing_module_for_tests")
    problems = import_user_modules()
    from inspector.dispatch import CallContext, resolve

    assert resolve("attention", CallContext("attention", causal=True)).name == "mine"
    assert problems == (
        f"{IMPORT_ENV}: could not import missing_module_for_tests: ModuleNotFoundError: "
        "No module named 'missing_module_for_tests'",
    )
    assert (
        "no such module"
        in invoke(
            "lab",
            "--no-browser",
            "--import",
            "missing_module_for_tests",
            "--notebooks",
            str(Path(__file__).parents[1] / "notebooks"),
        ).stderr
    )
