"""The private torch names our init_rpc relies on: all present in the tested torch, a clear error where one is not.

These tests pin torch's internals, so on any torch but the tested one, or one without
``torch.distributed.rpc``'s ``api`` and ``backend_registry``, the module is skipped at import
with the reason (the package's own refusal on such a torch is what the tests that remove one
internal check).
"""

from __future__ import annotations

import pytest
import torch

from inspector.rpc import (
    BackendType,
    UnsupportedTorchError,
    init_backend,
    init_rpc,
    register_backend,
)
from inspector.rpc._job_state import JOB_INTERNALS
from inspector.rpc._torch_internals import (
    INIT_RPC_INTERNALS,
    TENSORPIPE_INTERNALS,
    TESTED_TORCH,
    require_torch_internals,
)


def is_tested_torch() -> bool:
    """Whether the installed torch is the tested major.minor, ``TESTED_TORCH``."""
    return str(torch.__version__).split("+")[0].split(".")[:2] == TESTED_TORCH.split(".")


if not is_tested_torch():
    pytest.skip(
        f"pins torch {TESTED_TORCH}'s RPC internals; this is torch {torch.__version__}", allow_module_level=True
    )
try:  # a build without RPC, or one that moved these modules, is skipped here, not a collection error
    import torch.distributed.rpc as torch_rpc
    from torch.distributed.rpc import api, backend_registry
except ImportError as missing:
    pytest.skip(
        f"pins torch.distributed.rpc's api and backend_registry, which this torch lacks: {missing}",
        allow_module_level=True,
    )


def test_the_tested_torch_has_every_internal_we_name() -> None:
    assert torch.__version__.startswith(TESTED_TORCH)
    require_torch_internals(INIT_RPC_INTERNALS + TENSORPIPE_INTERNALS + JOB_INTERNALS, "this test")


def test_a_name_that_does_not_exist_is_reported_missing() -> None:
    with pytest.raises(UnsupportedTorchError) as caught:
        require_torch_internals(["torch.distributed.rpc.no_such_name", "no_such_package.thing"], "this test")
    assert caught.value.missing == ["torch.distributed.rpc.no_such_name", "no_such_package.thing"]


def test_init_rpc_on_a_torch_without_an_internal_names_the_version_what_is_missing_and_the_next_step(
    monkeypatch: pytest.MonkeyPatch, backends: None
) -> None:
    monkeypatch.setattr(torch, "__version__", "2.4.0")
    monkeypatch.delattr(api, "_init_rpc_states")
    counter = torch_rpc._init_counter
    ours = register_backend("OURS_ONLY", BackendType.TENSORPIPE.value[0], BackendType.TENSORPIPE.value[1])
    with pytest.raises(RuntimeError, match=r"needs torch internals that torch 2\.4\.0 does not have") as caught:
        init_rpc("worker0", backend=ours)  # a backend torch does not know takes the internals path
    error = caught.value
    assert isinstance(error, UnsupportedTorchError)
    assert error.torch_version == "2.4.0" and error.missing == ["torch.distributed.rpc.api._init_rpc_states"]
    assert error.needed_by == "inspector.rpc.init_rpc"
    text = str(error)
    assert "torch version = 2.4.0\nmissing = ['torch.distributed.rpc.api._init_rpc_states']" in text
    assert f"tested with = torch {TESTED_TORCH}" in text
    assert (
        f"next step = install torch {TESTED_TORCH}, or start RPC with torch's own torch.distributed.rpc.init_rpc"
        "(name, backend=torch.distributed.rpc.BackendType.TENSORPIPE, ...)"
    ) in text
    # refused before any step: no agent, no store, torch's counter untouched
    assert not torch_rpc._is_current_rpc_agent_set() and torch_rpc._init_counter == counter


def test_the_tensorpipe_handler_on_a_torch_without_torchs_handler_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(backend_registry, "_tensorpipe_init_backend_handler")
    with pytest.raises(UnsupportedTorchError, match="the TENSORPIPE backend's init handler needs torch internals") as c:
        init_backend("TENSORPIPE", None, "worker0", 0, 1, None)
    assert c.value.missing == ["torch.distributed.rpc.backend_registry._tensorpipe_init_backend_handler"]
    assert c.value.torch_version == torch.__version__


def _run_this_module(tmp_path, setup: str):  # type: ignore[no-untyped-def]
    """Run this module under pytest in a fresh interpreter after ``setup``; its output, once it skipped."""
    import subprocess
    import sys

    code = (
        f"import sys, torch, pytest; {setup}; "
        f"sys.exit(pytest.main([{__file__!r}, '-rs', '-q', '-p', 'no:cacheprovider', '-p', 'no:randomly']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    # a module skipped at import collects nothing: pytest's exit status 5 alone, 0 within the suite
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout[-3000:]
    lines = result.stdout.splitlines()
    assert "passed" not in lines[-1] and "skipped" in lines[-1] and "error" not in lines[-1]
    return result.stdout


def test_on_another_torch_this_module_is_skipped_with_the_reason(tmp_path) -> None:
    out = _run_this_module(tmp_path, "torch.__version__ = '2.99.0'")
    assert f"pins torch {TESTED_TORCH}'s RPC internals; this is torch 2.99.0" in out


@pytest.mark.parametrize("module", ["api", "backend_registry"])
def test_a_torch_without_rpcs_api_or_backend_registry_skips_this_module_at_import(tmp_path, module: str) -> None:
    hide = (
        f"import torch.distributed.rpc as r; delattr(r, {module!r}); "
        f"sys.modules['torch.distributed.rpc.{module}'] = None"
    )
    out = _run_this_module(tmp_path, hide)
    assert "pins torch.distributed.rpc's api and backend_registry, which this torch lacks" in out
