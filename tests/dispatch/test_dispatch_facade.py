from __future__ import annotations

import inspector.dispatch as dispatch

SPEC_NAMES = {
    "CallContext", "Spec", "ImplRecord", "Resolution", "ExplicitSelectionError", "axis", "register_family",
    "register_impl", "unregister_impl", "register_env_alias", "invalidate", "op_backend", "resolve",
    "resolve_plan", "explain", "explain_plan", "trace", "reload_env", "set_op", "context_for",
}


def test_facade_all_is_sorted_and_every_name_exists() -> None:
    assert dispatch.__all__ == sorted(dispatch.__all__)
    missing = [name for name in dispatch.__all__ if not hasattr(dispatch, name)]
    assert missing == []


def test_facade_exports_the_public_contract() -> None:
    assert set(dispatch.__all__) >= SPEC_NAMES
