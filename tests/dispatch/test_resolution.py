from __future__ import annotations

import logging

import pytest
import torch

from inspector.dispatch import (
    CallContext,
    ExplicitSelectionError,
    ImplRecord,
    NoImplementationError,
    Spec,
    UnknownFamilyError,
    UnknownImplementationError,
    context_for,
    env_selection,
    invalidate,
    op_backend,
    parse_selections,
    process_selection,
    register_env_alias,
    register_family,
    register_impl,
    reload_env,
    resolve,
    resolve_plan,
    rows,
    set_op,
    unregister_impl,
)

BF16, F32 = torch.bfloat16, torch.float32


def toy_ctx(dtype: torch.dtype = F32, **axes: object) -> CallContext:
    return CallContext("toy", dtype=dtype).evolve(**axes)


def test_chain_returns_first_capable_row(toy: str) -> None:
    assert resolve(toy, toy_ctx(BF16)).record.obj == "alpha-obj"
    assert resolve(toy, toy_ctx(F32)).record.obj == "beta-obj"
    assert resolve(toy, toy_ctx(F32)).origin == "chain"


def test_unfaithful_rows_are_invisible_to_the_chain_but_selectable(toy: str) -> None:
    assert resolve(toy, toy_ctx(F32)).name == "beta"  # fp8 ranks above beta but changes numerics
    with op_backend(toy="fp8"):
        assert resolve(toy, toy_ctx(F32)).record.obj == "fp8-obj"
    assert resolve(toy, toy_ctx(F32), explicit="fp8").name == "fp8"


def test_explicit_selection_is_strict_and_names_the_row_and_failing_clauses(toy: str) -> None:
    with pytest.raises(ExplicitSelectionError, match=r"toy row 'alpha' \(passed explicitly\)") as exc:
        resolve(toy, toy_ctx(F32), explicit="alpha")
    error = exc.value
    assert isinstance(error, RuntimeError)
    assert (error.family, error.row, error.origin, error.available) == ("toy", "alpha", "explicit", True)
    assert [(c.axis, c.required, c.actual) for c in error.failures] == [("dtype", "in {bfloat16}", "float32")]
    assert error.capable == ["fp8", "beta"]
    assert "failing = dtype: required in {bfloat16}, got float32" in str(error)
    assert "next step = " in str(error)
    assert resolve(toy, toy_ctx(BF16), explicit="alpha").origin == "explicit"


def test_context_selection_is_strict(toy: str) -> None:
    with op_backend(toy="alpha"):
        with pytest.raises(ExplicitSelectionError, match="selected with op_backend"):
            resolve(toy, toy_ctx(F32))
        assert resolve(toy, toy_ctx(BF16)).origin == "context"


def _impl(*args: object) -> None:
    """A stand-in implementation for third-party rows (only its identity matters here)."""


def test_unavailable_selected_row_says_so(toy: str) -> None:
    register_impl(ImplRecord("toy", "offline", _impl, Spec.always(), available=False, priority=-1))
    with pytest.raises(ExplicitSelectionError, match="available = False") as exc:
        resolve(toy, toy_ctx(F32), explicit="offline")
    assert exc.value.available is False
    assert resolve(toy, toy_ctx(F32)).name == "beta"  # and the chain skips it


def test_unknown_names_raise_value_error_eagerly(toy: str) -> None:
    with pytest.raises(ValueError, match="Unknown toy implementation: 'nope'") as exc:
        resolve(toy, toy_ctx(), explicit="nope")
    assert isinstance(exc.value, UnknownImplementationError)
    assert exc.value.known == ["alpha", "fp8", "beta"]
    with pytest.raises(ValueError, match="Unknown toy implementation"):
        op_backend(toy="nope")  # at construction, before any block runs


def test_unknown_family_is_a_key_error_for_resolve_and_a_value_error_for_op_backend(toy: str) -> None:
    with pytest.raises(KeyError, match="No operator family registered under 'nofamily'") as exc:
        resolve("nofamily", toy_ctx())
    assert isinstance(exc.value, UnknownFamilyError) and "toy" in exc.value.known
    with pytest.raises(ValueError, match="Known:"):
        op_backend(nofamily="x")


class Probe:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.calls: list[tuple] = []

    def supports_call(self, *args: object, **kwargs: object) -> bool:
        self.calls.append((args, kwargs))
        return self.answer


def test_unregistered_object_is_probed_once_through_supports_call(toy: str) -> None:
    probe = Probe(True)
    ctx = toy_ctx(raw=(1, 2), raw_kwargs={"k": 3})
    resolution = resolve(toy, ctx, explicit=probe)
    assert resolution.record.obj is probe and resolution.name == "Probe"
    assert probe.calls == [((1, 2), {"k": 3})]
    with pytest.raises(ExplicitSelectionError, match=r"Probe\.supports_call"):
        resolve(toy, ctx, explicit=Probe(False))


def test_registered_objects_are_found_by_identity() -> None:
    fast, slow = object(), object()
    register_family(
        "objs",
        [
            ImplRecord("objs", "fast", fast, Spec.dtype_in(BF16), priority=0),
            ImplRecord("objs", "slow", slow, Spec.always()),
        ],
        "slow",
    )
    assert resolve("objs", CallContext("objs", dtype=BF16), explicit=fast).name == "fast"
    with op_backend(objs=slow):
        assert resolve("objs", CallContext("objs", dtype=BF16)).name == "slow"
    assert [r.obj for r in rows("objs")] == [fast, slow]


def test_nested_scopes_restore_the_outer_selection(toy: str) -> None:
    with op_backend(toy="alpha"):
        with op_backend(toy="beta"):
            assert resolve(toy, toy_ctx(F32)).origin == "context"
        assert resolve(toy, toy_ctx(BF16)).name == "alpha"
        with op_backend(toy=None):  # None clears the outer selection for the block
            assert resolve(toy, toy_ctx(F32)).origin == "chain"
    assert resolve(toy, toy_ctx(F32)).origin == "chain"


def test_an_exception_inside_the_block_still_restores_state(toy: str) -> None:
    with pytest.raises(RuntimeError, match="boom"), op_backend(toy="alpha"):
        raise RuntimeError("boom")
    assert resolve(toy, toy_ctx(F32)).name == "beta"


def test_the_same_scope_object_can_be_reentered(toy: str) -> None:
    scope = op_backend(toy="alpha")
    with scope, scope:
        assert resolve(toy, toy_ctx(BF16)).origin == "context"
    assert resolve(toy, toy_ctx(BF16)).origin == "chain"


def test_set_op_is_soft(toy: str) -> None:
    set_op(toy, "alpha")
    assert resolve(toy, toy_ctx(F32)).name == "beta"
    assert resolve(toy, toy_ctx(F32)).origin == "chain"
    assert resolve(toy, toy_ctx(BF16)).origin == "env"
    set_op(toy, None)
    assert resolve(toy, toy_ctx(BF16)).origin == "chain"


def test_set_op_of_an_unknown_row_warns_once_and_falls_through(toy: str, caplog: pytest.LogCaptureFixture) -> None:
    set_op(toy, "missing")
    with caplog.at_level(logging.WARNING, logger="inspector.dispatch"):
        assert resolve(toy, toy_ctx(F32)).name == "beta"
        assert resolve(toy, toy_ctx(F32)).name == "beta"
    assert [r.message for r in caplog.records].count(
        "INSPECTOR_OPS: toy='missing' is not registered (rows: ['alpha', 'fp8', 'beta']); ignoring it"
    ) == 1


def test_incapable_process_selection_warns_once(toy: str, caplog: pytest.LogCaptureFixture) -> None:
    set_op(toy, "alpha")
    with caplog.at_level(logging.WARNING, logger="inspector.dispatch"):
        for _ in range(3):
            assert resolve(toy, toy_ctx(F32)).name == "beta"
    assert len([r for r in caplog.records if "cannot handle" in r.message]) == 1


def test_set_op_validates_family_profile_and_value_type(toy: str) -> None:
    with pytest.raises(KeyError, match="Known:"):
        set_op("nofamily", "x")
    with pytest.raises(ValueError, match=r"Profiles: \['reference'\]"):
        set_op("profile", "fast")
    with pytest.raises(TypeError, match="op_backend"):
        set_op(toy, object())  # type: ignore[arg-type]


def test_profile_reference_picks_the_fallback_unless_a_row_is_selected(toy: str) -> None:
    set_op("profile", "reference")
    resolution = resolve(toy, toy_ctx(BF16))
    assert (resolution.name, resolution.origin) == ("beta", "profile")
    set_op(toy, "alpha")
    assert resolve(toy, toy_ctx(BF16)).origin == "env"
    # an incapable process selection falls to the chain, not to the profile
    assert resolve(toy, toy_ctx(F32)).origin == "chain"


def test_context_beats_process_selection(toy: str) -> None:
    set_op(toy, "alpha")
    with op_backend(toy="beta"):
        assert resolve(toy, toy_ctx(F32)).origin == "context"


def test_environment_is_parsed_once_and_reload_env_rereads_it(toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECTOR_OPS", "toy=alpha")
    assert resolve(toy, toy_ctx(BF16)).origin == "env"
    monkeypatch.setenv("INSPECTOR_OPS", "")
    assert resolve(toy, toy_ctx(BF16)).origin == "env"  # no per-call environment reads
    reload_env()
    assert resolve(toy, toy_ctx(BF16)).origin == "chain"


def test_reload_env_replaces_set_op_edits(toy: str) -> None:
    set_op(toy, "alpha")
    reload_env()
    assert process_selection() == {}


def test_inspector_ops_beats_the_legacy_alias(toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    register_env_alias(toy, "TOY_BACKEND")
    monkeypatch.setenv("TOY_BACKEND", "BETA")
    reload_env()
    assert env_selection(toy) == "beta"  # alias values are lower-cased
    monkeypatch.setenv("INSPECTOR_OPS", "toy=alpha")
    reload_env()
    assert env_selection(toy) == "alpha"


def test_alias_registered_after_the_first_read_is_honoured(toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_LATE", "alpha")
    reload_env()
    register_env_alias(toy, "TOY_LATE")
    assert env_selection(toy) == "alpha"


def test_malformed_entries_and_unknown_names_warn_once_and_are_dropped(
    toy: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("INSPECTOR_OPS", "toy=alpha, bogus, =x, ghost=y, profile=fast")
    with caplog.at_level(logging.WARNING, logger="inspector.dispatch"):
        selection = reload_env()
        reload_env()
    assert dict(selection) == {"toy": "alpha", "ghost": "y"}
    messages = [r.message for r in caplog.records]
    assert sum("malformed entry 'bogus'" in m for m in messages) == 1
    assert sum("malformed entry '=x'" in m for m in messages) == 1
    assert sum("unknown operator family 'ghost'" in m for m in messages) == 1
    assert sum("unknown profile 'fast'" in m for m in messages) == 1


def test_entry_for_a_family_registered_later_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECTOR_OPS", "late=beta")
    reload_env()
    register_family(
        "late",
        [ImplRecord("late", "beta", "b", Spec.always()), ImplRecord("late", "gamma", "g", Spec.always(), priority=0)],
        "gamma",
    )
    assert resolve("late", CallContext("late")).origin == "env"


def test_parse_selections_reports_problems_without_raising() -> None:
    assert parse_selections("toy=alpha,profile=reference") == ({"toy": "alpha", "profile": "reference"}, ())
    entries, problems = parse_selections(" a = x ,, b=y, a=z, c")
    assert entries == {"a": "z", "b": "y"}
    assert len(problems) == 2 and "given twice" in problems[0] and "malformed entry 'c'" in problems[1]


def test_resolve_plan_takes_one_snapshot_of_several_families(toy: str) -> None:
    plan = resolve_plan({"toy": toy_ctx(BF16), "rotary": CallContext("rotary", dtype=F32)})
    assert plan["toy"].record.obj == "alpha-obj"
    assert plan["rotary"].name == "fused"


def test_no_capable_row_gives_the_fallback_and_an_incapable_fallback_raises() -> None:
    reference = ImplRecord("strict", "ref", "ref-obj", Spec.ndim(4))
    register_family("strict", [ImplRecord("strict", "fast", "f", Spec.dtype_in(BF16), priority=0)], reference)
    resolution = resolve("strict", CallContext("strict", dtype=F32, ndim=4))
    assert (resolution.name, resolution.origin) == ("ref", "fallback")
    with pytest.raises(NoImplementationError, match="not even the fallback 'ref'") as exc:
        resolve("strict", CallContext("strict", dtype=F32, ndim=3))
    assert dict(exc.value.reasons)["ref"] == "ndim: required == 4, got 3"


def test_rows_are_cached_until_invalidate_and_probes_are_memoised() -> None:
    state = {"available": False, "probes": 0}

    def probe() -> bool:
        state["probes"] += 1
        return state["available"]

    register_family(
        "hw",
        [
            ImplRecord("hw", "gpu", "g", Spec.always(), available=probe, priority=0),
            ImplRecord("hw", "cpu", "c", Spec.always()),
        ],
        "cpu",
    )
    ctx = CallContext("hw")
    assert resolve("hw", ctx).name == "cpu"
    state["available"] = True
    assert resolve("hw", ctx).name == "cpu"  # memoised
    assert state["probes"] == 1
    invalidate("hw")
    assert resolve("hw", ctx).name == "gpu"


def test_probe_each_call_rows_are_reprobed_every_time() -> None:
    state = {"available": False}
    register_family(
        "hot",
        [
            ImplRecord(
                "hot",
                "plug",
                "p",
                Spec.always(),
                available=lambda: state["available"],
                priority=0,
                probe_each_call=True,
            ),
            ImplRecord("hot", "base", "b", Spec.always()),
        ],
        "base",
    )
    assert resolve("hot", CallContext("hot")).name == "base"
    state["available"] = True
    assert resolve("hot", CallContext("hot")).name == "plug"


def test_third_party_rows_join_the_table_and_can_be_removed(toy: str) -> None:
    external = ImplRecord("toy", "external", _impl, Spec.inference(), priority=-1)
    register_impl(external)
    assert resolve(toy, toy_ctx(F32, fwd="prefill")).name == "external"
    assert resolve(toy, toy_ctx(F32)).name == "beta"
    with pytest.raises(ValueError, match="already exists"):
        register_impl(external)
    with pytest.raises(ValueError, match="already exists"):
        register_impl(ImplRecord("toy", "alpha", _impl, Spec.always()))
    unregister_impl(toy, "external")
    assert resolve(toy, toy_ctx(F32, fwd="prefill")).name == "beta"
    with pytest.raises(KeyError, match="cannot be unregistered"):
        unregister_impl(toy, "alpha")


def test_context_for_uses_the_family_extractor(toy: str) -> None:
    q = torch.zeros(2, 4, 8, 64, dtype=BF16)
    ctx = context_for("attention", q, q, q)
    assert (ctx.dtype, ctx.head_dim, ctx.ndim, ctx.extra["kv_len"]) == (BF16, 64, 4, 8)
    with pytest.raises(TypeError, match="no context extractor"):
        context_for(toy, q)


def test_rows_and_families_are_validated_at_registration() -> None:
    with pytest.raises(TypeError, match="spec must be a Spec"):
        ImplRecord("x", "y", None, lambda c: True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'profile'"):
        register_family("profile", [], "x")
    register_family("mixed", [ImplRecord("other", "y", None, Spec.always())], "y")
    with pytest.raises(ValueError, match="says family 'other'"):
        resolve("mixed", CallContext("mixed"))
