from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.dispatch import CallContext, Spec, axis

BF16, F32 = torch.bfloat16, torch.float32


def ctx(**axes: object) -> CallContext:
    return CallContext("toy").evolve(**axes)


def test_composition_builds_seed_style_descriptions() -> None:
    a, b = Spec.of(lambda c: True, "a"), Spec.of(lambda c: False, "b")
    assert (a & b).description == "(a and b)"
    assert (a | b).description == "(a or b)"
    assert (~a).description == "not(a)"
    assert Spec.always().description == "always"


def test_and_or_not_follow_boolean_logic() -> None:
    spec = axis("dtype").in_(BF16) & axis("grad_enabled").eq(False)
    assert spec.matches(ctx(dtype=BF16, grad_enabled=False))
    assert not spec.matches(ctx(dtype=BF16, grad_enabled=True))
    assert "dtype" in spec.description and "grad_enabled" in spec.description
    either = axis("fwd").none() | axis("has_cache").truthy()
    assert either.matches(ctx(fwd=None))
    assert either.matches(ctx(fwd="decode", has_cache=True))
    assert not either.matches(ctx(fwd="decode"))
    assert (~axis("fwd").none()).matches(ctx(fwd="decode"))


def test_builders_read_their_axes() -> None:
    assert Spec.dtype_in(BF16, F32).matches(ctx(dtype=F32))
    assert Spec.ndim(4).matches(ctx(ndim=4)) and not Spec.ndim(4).matches(ctx(ndim=3))
    assert Spec.head_dim_in(64, 128).matches(ctx(head_dim=128))
    assert Spec.fwd_in("prefill", "decode").matches(ctx(fwd="decode"))
    assert Spec.inference().matches(ctx(fwd="prefill")) and not Spec.inference().matches(ctx())
    assert Spec.training().matches(ctx()) and not Spec.training().matches(ctx(fwd="decode"))
    assert Spec.no_grad().matches(ctx(grad_enabled=False)) and not Spec.no_grad().matches(ctx())
    assert Spec.has_cache().matches(ctx(has_cache=True))
    assert Spec.mask_free().matches(ctx()) and not Spec.mask_free().matches(ctx(has_mask=True))
    assert Spec.cuda_device().matches(ctx(device_cuda=True)) and not Spec.cuda_device().matches(ctx())


def test_axis_reads_extra_axes_and_missing_ones_are_none() -> None:
    long_kv = axis("kv_len").ge(1024)
    assert long_kv.matches(ctx(extra={"kv_len": 4096}))
    assert not long_kv.matches(ctx(extra={"kv_len": 16}))
    assert not long_kv.matches(ctx())  # missing axis: None never satisfies a bound
    assert axis("window").none().matches(ctx())
    assert axis("window").falsy().matches(ctx())
    assert axis("kv_len").lt(10).matches(ctx(extra={"kv_len": 9}))
    assert axis("kv_len").gt(10).matches(ctx(extra={"kv_len": 11}))
    assert axis("kv_len").le(10).matches(ctx(extra={"kv_len": 10}))
    assert axis("fwd").is_(None).matches(ctx())
    assert axis("fwd").not_none().matches(ctx(fwd="decode"))


def test_check_reports_every_failing_clause_with_required_and_actual() -> None:
    spec = Spec.dtype_in(BF16) & Spec.mask_free() & axis("kv_len").ge(1024) & Spec.no_grad()
    checks = spec.check(ctx(dtype=F32, has_mask=True, extra={"kv_len": 8}, grad_enabled=False))
    assert [c.passed for c in checks] == [False, False, False, True]
    dtype, mask, kv_len, _ = checks
    assert (dtype.axis, dtype.required, dtype.actual) == ("dtype", "in {bfloat16}", "float32")
    assert (mask.axis, mask.required, mask.actual) == ("has_mask", "False", "True")
    assert (kv_len.axis, kv_len.required, kv_len.actual) == ("kv_len", ">= 1024", "8")
    assert str(kv_len) == "kv_len: required >= 1024, got 8"
    assert [c.clause for c in spec.failures(ctx(dtype=BF16, extra={"kv_len": 2048}))] == ["no_grad"]


def test_composite_clause_failure_shows_every_axis_it_reads() -> None:
    (check,) = (Spec.training() | Spec.has_cache()).check(ctx(fwd="decode"))
    assert not check.passed
    assert check.actual == "fwd=decode, has_cache=False"
    assert check.required == "(training or has_cache)"


def test_custom_predicate_can_name_its_axes() -> None:
    even = Spec.of(lambda c: c.head_dim % 2 == 0, "head_dim even", axes=["head_dim"])
    (check,) = even.check(ctx(head_dim=7))
    assert (check.passed, check.actual, check.axis) == (False, "7", "head_dim")
    assert Spec(lambda c: c.ndim == 4, "4-D").matches(ctx(ndim=4))  # the plain constructor form


def test_constants_never_become_code() -> None:
    hostile = "x) or True or (y"
    spec = axis("fwd").eq(hostile)
    assert not spec.matches(ctx(fwd="decode"))
    assert spec.matches(ctx(fwd=hostile))


def test_combining_with_a_non_spec_is_a_type_error_with_a_hint() -> None:
    with pytest.raises(TypeError, match=r"Spec\.of"):
        Spec.always() & (lambda c: True)  # type: ignore[operator]


def test_unhashable_values_still_match_by_equality() -> None:
    assert axis("shape").in_([1, 2], [3]).matches(ctx(extra={"shape": [3]}))


# -- property: compiled evaluation equals a naive interpretation of the tree -------------
LEAVES = [
    (Spec.dtype_in(BF16), lambda c: c.dtype == BF16),
    (Spec.mask_free(), lambda c: not c.has_mask),
    (Spec.no_grad(), lambda c: not c.grad_enabled),
    (Spec.inference(), lambda c: c.fwd is not None),
    (Spec.head_dim_in(64, 128), lambda c: c.head_dim in (64, 128)),
    (axis("kv_len").ge(1024), lambda c: c.extra.get("kv_len") is not None and c.extra["kv_len"] >= 1024),
    (Spec.of(lambda c: c.ndim == 4, "4-D"), lambda c: c.ndim == 4),
]


def trees(depth: int = 3) -> st.SearchStrategy:
    leaf = st.sampled_from(LEAVES)
    return st.recursive(
        leaf,
        lambda children: st.one_of(
            st.tuples(children, children).map(
                lambda p: (p[0][0] & p[1][0], lambda c, a=p[0][1], b=p[1][1]: a(c) and b(c))
            ),
            st.tuples(children, children).map(
                lambda p: (p[0][0] | p[1][0], lambda c, a=p[0][1], b=p[1][1]: a(c) or b(c))
            ),
            children.map(lambda p: (~p[0], lambda c, a=p[1]: not a(c))),
        ),
        max_leaves=8,
    )


contexts = st.builds(
    lambda dtype, mask, grad, fwd, head_dim, kv_len, ndim: CallContext(
        "toy", fwd, dtype, False, ndim, head_dim, False, mask, grad, False, {"kv_len": kv_len} if kv_len else {}
    ),
    st.sampled_from([BF16, F32, torch.float16]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, "prefill", "decode"]),
    st.sampled_from([32, 64, 96, 128]),
    st.one_of(st.none(), st.integers(0, 4096)),
    st.sampled_from([3, 4]),
)


@settings(max_examples=300, deadline=None)
@given(tree=trees(), context=contexts)
def test_compiled_spec_agrees_with_naive_evaluation(tree, context) -> None:
    spec, naive = tree
    assert spec.matches(context) == bool(naive(context))
    assert spec.matches(context) == all(check.passed for check in spec.check(context))
