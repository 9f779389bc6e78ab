"""Capability predicates over a ``CallContext``: composable, self-describing, explainable.

NOTE [ One evaluator ]
A ``Spec`` is a tree of clauses. Every clause carries a tiny Python expression over ``ctx``;
``&``, ``|`` and ``~`` combine expressions, and the tree is compiled with ``eval`` into one
function. The same clause expressions serve both modes: ``matches`` (and the family chain
compiled in ``plan.py``) short-circuit on the hot path, while ``check`` evaluates every
top-level clause and reports required vs actual values for traces. Only generated names and
attribute names ever enter the source; constants are bound in the namespace, never formatted
into code. Compiling keeps a five-row resolution at a few Python bytecodes per clause instead
of one closure call per clause (see benchmarks/dispatch.py). The clauses themselves (and what
checking one reports) are in ``clauses``; the builders over one axis, ``axis("kv_len").ge(1024)``,
are at the end of this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from inspector.dispatch.clauses import (
    Binder,
    Clause,
    ClauseCheck,
    check_clause,
    container,
    namespace_binder,
    prologue,
    set_text,
)
from inspector.dispatch.context import AXES, CallContext, format_value


class Spec:
    """A composable predicate over ``CallContext``; ``description`` says what it requires."""

    __slots__ = ("_cases", "_clause", "_kind", "_matcher", "_parts", "description")

    def __init__(self, fn: Callable[[CallContext], Any], description: str) -> None:
        clause = Clause(description, "{0}(ctx)", (fn,), (), "True")
        self._init("leaf", (), clause, description)

    def _init(self, kind: str, parts: tuple[Spec, ...], clause: Clause | None, description: str) -> None:
        self._kind = kind
        self._parts = parts
        self._clause = clause
        self.description = description
        self._matcher: Callable[[CallContext], bool] | None = None
        self._cases: tuple[Any, ...] = ()

    @classmethod
    def _leaf(cls, clause: Clause) -> Spec:
        spec = cls.__new__(cls)
        spec._init("leaf", (), clause, clause.description)
        return spec

    @classmethod
    def _node(cls, kind: str, parts: tuple[Spec, ...], description: str) -> Spec:
        spec = cls.__new__(cls)
        spec._init(kind, parts, None, description)
        return spec

    # -- algebra --------------------------------------------------------------------------
    def __and__(self, other: Spec) -> Spec:
        return Spec._node("and", (self, _as_spec(other)), f"({self.description} and {other.description})")

    def __or__(self, other: Spec) -> Spec:
        return Spec._node("or", (self, _as_spec(other)), f"({self.description} or {other.description})")

    def __invert__(self) -> Spec:
        return Spec._node("not", (self,), f"not({self.description})")

    def __repr__(self) -> str:
        return f"Spec({self.description!r})"

    # -- evaluation -----------------------------------------------------------------------
    def source(self, bind: Binder) -> str:
        """This spec as one Python expression over ``ctx``, constants bound through ``bind``."""
        if self._kind == "leaf":
            assert self._clause is not None
            names = [bind(value) for value in self._clause.constants]
            return "(" + self._clause.template.format(*names) + ")"
        if self._kind == "not":
            return f"(not {self._parts[0].source(bind)})"
        if self._kind == "switch":
            return self._switch_source(bind)
        joiner = " and " if self._kind == "and" else " or "
        return "(" + joiner.join(part.source(bind) for part in self._parts) + ")"

    def matches(self, ctx: CallContext) -> bool:
        """Whether ``ctx`` satisfies this spec; a clause that raises counts as not satisfied."""
        try:
            return self._compiled()(ctx)
        except Exception:
            return False

    def _compiled(self) -> Callable[[CallContext], bool]:
        """The compiled predicate (it raises whatever a clause raises)."""
        matcher = self._matcher
        if matcher is None:
            namespace: dict[str, Any] = {}
            expression = self.source(namespace_binder(namespace))
            lines = ["def matcher(ctx):", *prologue([self], namespace), f"    return bool({expression})"]
            exec("\n".join(lines), namespace)
            matcher = self._matcher = namespace["matcher"]
        return matcher

    def bindings(self) -> dict[str, str]:
        """The names this spec's clauses read from a prologue, with their expressions over ``ctx``."""
        if self._kind == "leaf":
            assert self._clause is not None
            return dict(self._clause.bindings)
        found: dict[str, str] = {}
        for part in self._parts:
            found.update(part.bindings())
        return found

    def conjuncts(self, ctx: CallContext | None = None) -> tuple[Spec, ...]:
        """The top-level clauses: ``a & (b & c)`` gives ``(a, b, c)``; a ``switch`` gives the
        clauses of the case ``ctx`` selects (all cases' clauses when ``ctx`` is ``None``)."""
        if self._kind == "and":
            return tuple(c for part in self._parts for c in part.conjuncts(ctx))
        if self._kind == "switch":
            if ctx is None:
                return tuple(c for part in self._parts for c in part.conjuncts(None))
            return self._case_for(ctx).conjuncts(ctx)
        return (self,)

    @property
    def axes(self) -> tuple[str, ...]:
        """The context axes this spec reads, in first-use order."""
        if self._kind == "leaf":
            assert self._clause is not None
            return self._clause.axes
        seen: dict[str, None] = {}
        for part in self._parts:
            seen.update(dict.fromkeys(part.axes))
        return tuple(seen)

    def check(self, ctx: CallContext) -> tuple[ClauseCheck, ...]:
        """Evaluate every top-level clause (no short-circuit) with required and actual values."""
        return tuple(check_clause(part, ctx) for part in self.conjuncts(ctx))

    # -- switch ---------------------------------------------------------------------------
    @classmethod
    def switch(cls, axis_name: str, cases: dict[Any, Spec]) -> Spec:
        """A spec that depends on one axis: the spec of the case whose key equals the axis value.

        ``Spec.switch("device", {"cpu": cpu_rules, "cuda": cuda_rules})``: traces show only the
        clauses of the case in force; a value with no case fails one clause naming the cases.
        """
        if not cases:
            raise ValueError("Spec.switch needs at least one case")
        for spec in cases.values():
            _as_spec(spec)
        otherwise = axis(axis_name).in_(*cases)
        described = "; ".join(f"{format_value(k)}: {v.description}" for k, v in cases.items())
        spec = cls._node("switch", (*cases.values(), otherwise), f"by {axis_name} ({described})")
        spec._cases = tuple(cases)
        return spec

    def _case_for(self, ctx: CallContext) -> Spec:
        otherwise = self._parts[-1]
        reader = otherwise.axes[0]
        value = ctx.value_of(reader)
        for key, part in zip(self._cases, self._parts[:-1], strict=False):
            if value == key:
                return part
        return otherwise

    def _switch_source(self, bind: Binder) -> str:
        reader = Axis(self._parts[-1].axes[0])
        read = reader._read.format(*[bind(c) for c in reader._read_constants])
        expression = "False"
        for key, part in reversed(list(zip(self._cases, self._parts[:-1], strict=False))):
            expression = f"({part.source(bind)} if {read} == {bind(key)} else {expression})"
        return expression

    def failures(self, ctx: CallContext) -> tuple[ClauseCheck, ...]:
        return tuple(c for c in self.check(ctx) if not c.passed)

    # -- builders -------------------------------------------------------------------------
    @classmethod
    def always(cls) -> Spec:
        return cls._leaf(Clause("always", "True", (), (), "nothing"))

    @classmethod
    def of(cls, fn: Callable[[CallContext], Any], description: str, *, axes: Iterable[str] = ()) -> Spec:
        """Wrap any predicate; ``axes`` names what it reads so traces can show actual values."""
        return cls._leaf(Clause(description, "{0}(ctx)", (fn,), tuple(axes), description))

    @classmethod
    def dtype_in(cls, *dtypes: Any) -> Spec:
        return axis("dtype").in_(*dtypes)

    @classmethod
    def ndim(cls, n: int) -> Spec:
        return axis("ndim").eq(n)

    @classmethod
    def head_dim_in(cls, *dims: int) -> Spec:
        return axis("head_dim").in_(*dims)

    @classmethod
    def fwd_in(cls, *modes: str | None) -> Spec:
        return axis("fwd").in_(*modes)

    @classmethod
    def inference(cls) -> Spec:
        return cls._leaf(Clause("inference", "ctx.fwd is not None", (), ("fwd",), "not None (inference)"))

    @classmethod
    def training(cls) -> Spec:
        return cls._leaf(Clause("training", "ctx.fwd is None", (), ("fwd",), "None (training)"))

    @classmethod
    def no_grad(cls) -> Spec:
        return cls._leaf(Clause("no_grad", "not ctx.grad_enabled", (), ("grad_enabled",), "False"))

    @classmethod
    def has_cache(cls) -> Spec:
        return cls._leaf(Clause("has_cache", "ctx.has_cache", (), ("has_cache",), "True"))

    @classmethod
    def mask_free(cls) -> Spec:
        return cls._leaf(Clause("mask_free", "not ctx.has_mask", (), ("has_mask",), "False"))

    @classmethod
    def causal(cls) -> Spec:
        """The call is causal (``is_causal=True``), not an explicit mask."""
        return cls._leaf(Clause("causal", "ctx.causal", (), ("causal",), "True"))

    @classmethod
    def non_causal(cls) -> Spec:
        return cls._leaf(Clause("non_causal", "not ctx.causal", (), ("causal",), "False"))

    @classmethod
    def cuda_device(cls) -> Spec:
        return cls._leaf(Clause("cuda_device", "ctx.device_cuda", (), ("device_cuda",), "True"))

    @classmethod
    def _rule(
        cls,
        name: str,
        template: str,
        *,
        axes: Iterable[str],
        required: str,
        message: str | Callable[[CallContext], str] = "",
        constants: tuple[Any, ...] = (),
        show: Callable[[CallContext], str] | None = None,
        bindings: tuple[tuple[str, str], ...] = (),
    ) -> Spec:
        """A clause written as an expression over ``ctx`` (package-internal: e.g. PyTorch's SDPA
        checks), with its own failure ``message``, a ``show`` function for the actual values and
        ``bindings`` the expression reads (see ``prologue``)."""
        return cls._leaf(Clause(name, template, constants, tuple(axes), required, message, show, bindings))


def _as_spec(other: Any) -> Spec:
    if not isinstance(other, Spec):
        raise TypeError(f"Specs combine with other Specs, not {type(other).__name__}; wrap it with Spec.of(fn, desc)")
    return other


# -- clauses over one axis -------------------------------------------------------------------
class Axis:
    """Builders for clauses over one axis: a ``CallContext`` field or a key of ``extra``."""

    __slots__ = ("_read", "_read_constants", "name")

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"axis() takes an axis name, got {name!r}")
        self.name = name
        self._read_constants: tuple[Any, ...]
        if name in AXES:
            self._read, self._read_constants = f"ctx.{name}", ()
        else:
            self._read, self._read_constants = "ctx.extra.get({0})", (name,)

    def _clause(self, description: str, test: str, constants: tuple[Any, ...], required: str) -> Spec:
        # ``test`` says {v} for the axis read and {c} for its one constant; the read may itself
        # bind the extra key as constant {0}, so the test's constant comes after it.
        template = test.replace("{c}", f"{{{len(self._read_constants)}}}").replace("{v}", self._read)
        clause = Clause(description, template, self._read_constants + constants, (self.name,), required)
        return Spec._leaf(clause)

    def in_(self, *values: Any) -> Spec:
        text = set_text(values)
        return self._clause(f"{self.name} in {text}", "{v} in {c}", (container(values),), f"in {text}")

    def eq(self, value: Any) -> Spec:
        shown = format_value(value)
        return self._clause(f"{self.name}=={shown}", "{v} == {c}", (value,), f"== {shown}")

    def is_(self, value: Any) -> Spec:
        shown = format_value(value)
        return self._clause(f"{self.name} is {shown}", "{v} is {c}", (value,), f"is {shown}")

    def none(self) -> Spec:
        return self._clause(f"{self.name} is None", "{v} is None", (), "None")

    def not_none(self) -> Spec:
        return self._clause(f"{self.name} is not None", "{v} is not None", (), "not None")

    def truthy(self) -> Spec:
        return self._clause(self.name, "bool({v})", (), "truthy")

    def falsy(self) -> Spec:
        return self._clause(f"!{self.name}", "not {v}", (), "falsy")

    def le(self, bound: Any) -> Spec:
        return self._compare("<=", bound)

    def lt(self, bound: Any) -> Spec:
        return self._compare("<", bound)

    def ge(self, bound: Any) -> Spec:
        return self._compare(">=", bound)

    def gt(self, bound: Any) -> Spec:
        return self._compare(">", bound)

    def _compare(self, op: str, bound: Any) -> Spec:
        shown = format_value(bound)
        # None (axis unknown) never satisfies a bound instead of raising TypeError.
        test = "({v} is not None and {v} " + op + " {c})"
        return self._clause(f"{self.name}{op}{shown}", test, (bound,), f"{op} {shown}")


def axis(name: str) -> Axis:
    """Start a clause over ``name``: ``axis("dtype").in_(torch.bfloat16) & axis("kv_len").ge(1024)``."""
    return Axis(name)


__all__ = ["Axis", "ClauseCheck", "Spec", "axis", "prologue"]
