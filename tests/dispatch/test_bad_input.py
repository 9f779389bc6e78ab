"""Bad rows, raising specs and misused selections: one clear error where the mistake is made."""

from __future__ import annotations

import pytest
import torch

from inspector.dispatch import (
    CallContext,
    DispatchError,
    ExplicitSelectionError,
    ImplRecord,
    Spec,
    UnknownFamilyError,
    UnknownImplementationError,
    axis,
    explain,
    op_backend,
    register_family,
    register_impl,
    resolve,
    trace,
)
from inspector.errors import InspectorError

F32 = torch.float32


def _impl(*args: object) -> None:
    """A stand-in implementation."""


def test_register_impl_refuses_a_non_integer_priority(toy: str) -> None:
    record = ImplRecord.__new__(ImplRecord)  # bypass the constructor's own check, as a hostile caller could
    for name, value in dict(
        family="toy",
        name="odd",
        obj=_impl,
        spec=Spec.always(),
        available=True,
        priority="high",
        faithful=True,
        probe_each_call=False,
        description="",
    ).items():
        object.__setattr__(record, name, value)
    with pytest.raises(TypeError, match="priority must be an int"):
        register_impl(record)
    assert resolve(toy, CallContext(toy, dtype=F32)).name == "beta"  # the family is untouched


def test_register_impl_refuses_a_spec_that_is_not_a_spec(toy: str) -> None:
    record = ImplRecord("toy", "odd", _impl, Spec.always(), priority=3)
    object.__setattr__(record, "spec", "dtype == float16")  # changed after construction
    with pytest.raises(TypeError, match="spec must be a Spec"):
        register_impl(record)
    assert resolve(toy, CallContext(toy, dtype=F32)).name == "beta"  # the family is untouched


def test_impl_record_refuses_a_non_integer_priority_at_construction() -> None:
    with pytest.raises(TypeError, match="priority must be an int"):
        ImplRecord("toy", "odd", _impl, Spec.always(), priority=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="priority must be an int"):
        ImplRecord("toy", "odd", _impl, Spec.always(), priority=True)


def test_register_impl_refuses_a_non_spec_and_a_non_callable(toy: str) -> None:
    with pytest.raises(TypeError, match="spec must be a Spec"):
        register_impl(ImplRecord("toy", "odd", _impl, lambda ctx: True))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be callable"):
        register_impl(ImplRecord("toy", "odd", "not-a-function", Spec.always()))
    with pytest.raises(TypeError, match="takes an ImplRecord"):
        register_impl(("toy", "odd"))  # type: ignore[arg-type]
    with pytest.raises(UnknownFamilyError):
        register_impl(ImplRecord("nope", "odd", _impl, Spec.always()))


def test_a_spec_that_raises_rejects_only_its_row(toy: str) -> None:
    def broken(ctx: CallContext) -> bool:
        raise ZeroDivisionError("division by zero in my predicate")

    register_impl(ImplRecord("toy", "fragile", _impl, Spec.of(broken, "my predicate"), priority=-5))
    ctx = CallContext(toy, dtype=F32)
    assert resolve(toy, ctx).name == "beta"  # the chain skips it
    row = trace(toy, ctx).row("fragile")
    assert row.verdict == "reject"
    [check] = row.failing
    assert check.error == "ZeroDivisionError: division by zero in my predicate"
    assert "fragile: reject (my predicate: raised ZeroDivisionError" in explain(toy, ctx)
    with pytest.raises(ExplicitSelectionError, match="raised ZeroDivisionError"):
        resolve(toy, ctx, explicit="fragile")


def test_a_comparison_with_a_wrong_type_is_a_failing_clause_not_a_crash() -> None:
    register_family(
        "typed",
        [
            ImplRecord("typed", "long", _impl, axis("kv_len").ge(1024), priority=0),
            ImplRecord("typed", "base", _impl, Spec.always()),
        ],
        "base",
    )
    ctx = CallContext("typed", extra={"kv_len": "abc"})
    assert resolve("typed", ctx).name == "base"
    [check] = trace("typed", ctx).row("long").failing
    assert check.error.startswith("TypeError") and check.actual == "abc"


@pytest.mark.parametrize(
    "misuse",
    [
        lambda: op_backend(["attention", "math"]),  # type: ignore[arg-type]
        lambda: op_backend(attention=123),
        lambda: op_backend(attention=["math"]),
        lambda: op_backend({1: "math"}),  # type: ignore[dict-item]
    ],
)
def test_op_backend_misuse_raises_type_error_naming_the_argument(misuse) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError) as exc:
        misuse()
    assert "NoneType" not in str(exc.value)
    assert "op_backend" in str(exc.value)


def test_op_backend_accepts_a_mapping_of_selections() -> None:
    ctx = CallContext("attention", dtype=F32, ndim=4, head_dim=64)
    with op_backend({"attention": "math"}):
        assert resolve("attention", ctx).name == "math"


def test_op_backend_unknown_row_and_family_name_what_exists() -> None:
    with pytest.raises(UnknownImplementationError, match="Known: ") as exc:
        op_backend(attention="mathh")
    assert "math" in exc.value.known
    with pytest.raises(UnknownFamilyError, match="Known: "):
        op_backend(atention="math")


def test_exit_without_enter_says_how_to_use_it() -> None:
    scope = op_backend(attention="math")
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        scope.__exit__(None, None, None)


def test_dispatch_errors_share_one_root() -> None:
    for error in (UnknownFamilyError, UnknownImplementationError, ExplicitSelectionError):
        assert issubclass(error, DispatchError) and issubclass(error, InspectorError)
    assert issubclass(UnknownFamilyError, KeyError)  # and still what existing code catches
