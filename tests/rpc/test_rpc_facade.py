"""The public face of inspector.rpc beyond what tests/test_facades.py checks of every facade: an import
that stays light, and its errors named apart from the other parts'."""

from __future__ import annotations

import json
import subprocess
import sys

import inspector.rpc as rpc


def test_importing_the_package_imports_neither_torch_rpc_nor_ui_libraries() -> None:
    heavy = ["torch", "torch.distributed.rpc", "ipywidgets", "pandas", "matplotlib"]
    code = f"import json, sys, inspector.rpc; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == []


def test_the_rpc_registry_error_is_named_apart_from_the_data_backends_one() -> None:
    from inspector import backends

    assert "UnknownBackendError" not in rpc.__all__ and "UnknownRpcBackendError" in rpc.__all__
    assert rpc.UnknownRpcBackendError is not backends.UnknownBackendError
    assert issubclass(rpc.UnknownRpcBackendError, KeyError) and issubclass(rpc.UnknownRpcBackendError, ValueError)


def test_the_rpc_errors_are_counted_and_the_special_ones_are_the_builtins_they_mean() -> None:
    # that each is under RpcError and also a builtin is checked of every part in tests/test_facades.py
    from inspector.errors import Cancelled

    errors = [getattr(rpc, name) for name in rpc.__all__ if name.endswith("Error") and name != "InitError"]
    assert len(errors) == 22
    assert issubclass(rpc.WorldCancelled, Cancelled) and issubclass(rpc.WorldCancelled, rpc.LocalWorldError)
    assert issubclass(rpc.RpcJoinError, TimeoutError) and issubclass(rpc.JobTopologyError, ValueError)
    assert issubclass(rpc.JobGatherError, TimeoutError) and issubclass(rpc.JobViewError, ValueError)
    assert issubclass(rpc.GatherFailedError, RuntimeError) and issubclass(rpc.GatherUsageError, ValueError)
