"""The private torch names our init_rpc relies on: all present in the tested torch, a clear error where one is not."""

from __future__ import annotations

import pytest
import torch
import torch.distributed.rpc as torch_rpc
from torch.distributed.rpc import api, backend_registry

from inspector.rpc import UnsupportedTorchError, init_backend, init_rpc
from inspector.rpc._torch_internals import (
    INIT_RPC_INTERNALS,
    TENSORPIPE_INTERNALS,
    TESTED_TORCH,
    require_torch_internals,
)


def test_the_tested_torch_has_every_internal_we_name() -> None:
    assert torch.__version__.startswith(TESTED_TORCH)
    require_torch_internals(INIT_RPC_INTERNALS + TENSORPIPE_INTERNALS, "this test")


def test_a_name_that_does_not_exist_is_reported_missing() -> None:
    with pytest.raises(UnsupportedTorchError) as caught:
        require_torch_internals(["torch.distributed.rpc.no_such_name", "no_such_package.thing"], "this test")
    assert caught.value.missing == ["torch.distributed.rpc.no_such_name", "no_such_package.thing"]


def test_init_rpc_on_a_torch_without_an_internal_names_the_version_what_is_missing_and_the_next_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch, "__version__", "2.4.0")
    monkeypatch.delattr(api, "_init_rpc_states")
    counter = torch_rpc._init_counter
    with pytest.raises(RuntimeError, match=r"needs torch internals that torch 2\.4\.0 does not have") as caught:
        init_rpc("worker0", rank=0, world_size=1)
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
