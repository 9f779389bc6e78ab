"""The dispatch facade exports the public contract (tests/test_facades.py checks it is sorted and resolves)."""

from __future__ import annotations

import inspector.dispatch as dispatch

SPEC_NAMES = {
    "CallContext",
    "Spec",
    "ImplRecord",
    "Resolution",
    "ExplicitSelectionError",
    "axis",
    "register_family",
    "register_impl",
    "unregister_impl",
    "register_env_alias",
    "invalidate",
    "op_backend",
    "resolve",
    "resolve_plan",
    "explain",
    "explain_plan",
    "trace",
    "reload_env",
    "set_op",
    "context_for",
}


def test_facade_exports_the_public_contract() -> None:
    assert set(dispatch.__all__) >= SPEC_NAMES
