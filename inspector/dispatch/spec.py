"""Capability predicates over a ``CallContext``: composable, self-describing, explainable.

NOTE [ One evaluator ]
A ``Spec`` is a tree of clauses. Every clause carries a tiny Python expression over ``ctx``;
``&``, ``|`` and ``~`` combine expressions, and the tree is compiled with ``eval`` into one
function. The same clause expressions serve both modes: ``matches`` (and the family chain
compiled in ``plan.py``) short-circuit on the hot path, while ``check`` evaluates every
top-level clause and reports required vs actual values for traces. Only generated names and
attribute names ever enter the source; constants are bound in the namespace, never formatted
into code. Compiling keeps a five-row resolution at a few Python bytecodes per clause instead
of one closure call per clause (see benchmarks/dispatch.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from inspector.dispatch.context import CallContext, format_value

Binder = Callable[[Any], str]


@dataclass(frozen=True, slots=True)
class ClauseCheck:
    """One clause evaluated against one context.

    ``message`` is the clause's own words for a failure (for ``torch_sdpa``, PyTorch's); ``error``
    is set when evaluating the clause raised, which counts as a failure.
    """

    clause: str
    axis: str | None
    required: str
    actual: str
    passed: bool
    message: str = ""
    error: str = ""

    def __str__(self) -> str:
        """``dtype: required in {float16, bfloat16}, got float32`` (the reason a row is rejected)."""
        if self.error:
            return f"{self.clause}: raised {self.error}"
        if self.message:
            return f"{self.message} (required {self.required}, got {self.actual})"
        if self.axis is not None:
            return f"{self.axis}: required {self.required}, got {self.actual}"
        if self.actual in ("True", "False"):
            return f"{self.clause}: {'satisfied' if self.passed else 'not satisfied'}"
        return f"{self.clause}: got {self.actual}"


@dataclass(frozen=True, slots=True)
class _Clause:
    description: str
    template: str  # expression over ``ctx``; ``{0}``, ``{1}``... are bound constants
    constants: tuple[Any, ...]
    axes: tuple[str, ...]
    required: str
    message: str | Callable[[CallContext], str] = ""  # a callable words the failure from the context
    show: Callable[[CallContext], str] | None = None  # the actual value(s), for traces
    bindings: tuple[tuple[str, str], ...] = ()  # (name, expression over ctx) the template reads, see prologue()


def _namespace_binder(namespace: dict[str, Any]) -> Binder:
    counter = itertools.count(len(namespace))

    def bind(value: Any) -> str:
        name = f"_k{next(counter)}"
        namespace[name] = value
        return name

    return bind


def _set_text(values: Iterable[Any]) -> str:
    return "{" + ", ".join(format_value(v) for v in values) + "}"


def _container(values: tuple[Any, ...]) -> Any:
    try:
        return frozenset(values)
    except TypeError:  # unhashable values still work, by equality
        return values


class Spec:
    """A composable predicate over ``CallContext``; ``description`` says what it requires."""

    __slots__ = ("_cases", "_clause", "_kind", "_matcher", "_parts", "description")

    def __init__(self, fn: Callable[[CallContext], Any], description: str) -> None:
        clause = _Clause(description, "{0}(ctx)", (fn,), (), "True")
        self._init("leaf", (), clause, description)

    def _init(self, kind: str, parts: tuple[Spec, ...], clause: _Clause | None, description: str) -> None:
        self._kind = kind
        self._parts = parts
        self._clause = clause
        self.description = description
        self._matcher: Callable[[CallContext], bool] | None = None
        self._cases: tuple[Any, ...] = ()

    @classmethod
    def _leaf(cls, clause: _Clause) -> Spec:
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
            expression = self.source(_namespace_binder(namespace))
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
        return tuple(_check_one(part, ctx) for part in self.conjuncts(ctx))

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
        return cls._leaf(_Clause("always", "True", (), (), "nothing"))

    @classmethod
    def of(cls, fn: Callable[[CallContext], Any], description: str, *, axes: Iterable[str] = ()) -> Spec:
        """Wrap any predicate; ``axes`` names what it reads so traces can show actual values."""
        return cls._leaf(_Clause(description, "{0}(ctx)", (fn,), tuple(axes), description))

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
        return cls._leaf(_Clause("inference", "ctx.fwd is not None", (), ("fwd",), "not None (inference)"))

    @classmethod
    def training(cls) -> Spec:
        return cls._leaf(_Clause("training", "ctx.fwd is None", (), ("fwd",), "None (training)"))

    @classmethod
    def no_grad(cls) -> Spec:
        return cls._leaf(_Clause("no_grad", "not ctx.grad_enabled", (), ("grad_enabled",), "False"))

    @classmethod
    def has_cache(cls) -> Spec:
        return cls._leaf(_Clause("has_cache", "ctx.has_cache", (), ("has_cache",), "True"))

    @classmethod
    def mask_free(cls) -> Spec:
        return cls._leaf(_Clause("mask_free", "not ctx.has_mask", (), ("has_mask",), "False"))

    @classmethod
    def causal(cls) -> Spec:
        """The call is causal (``is_causal=True``), not an explicit mask."""
        return cls._leaf(_Clause("causal", "ctx.causal", (), ("causal",), "True"))

    @classmethod
    def non_causal(cls) -> Spec:
        return cls._leaf(_Clause("non_causal", "not ctx.causal", (), ("causal",), "False"))

    @classmethod
    def cuda_device(cls) -> Spec:
        return cls._leaf(_Clause("cuda_device", "ctx.device_cuda", (), ("device_cuda",), "True"))

    @classmethod
    def _rule(
        cls, name: str, template: str, *, axes: Iterable[str], required: str,
        message: str | Callable[[CallContext], str] = "",
        constants: tuple[Any, ...] = (), show: Callable[[CallContext], str] | None = None,
        bindings: tuple[tuple[str, str], ...] = (),
    ) -> Spec:
        """A clause written as an expression over ``ctx`` (package-internal: e.g. PyTorch's SDPA
        checks), with its own failure ``message``, a ``show`` function for the actual values and
        ``bindings`` the expression reads (see ``prologue``)."""
        return cls._leaf(_Clause(name, template, constants, tuple(axes), required, message, show, bindings))


def prologue(specs: Iterable[Spec], namespace: dict[str, Any]) -> list[str]:
    """Lines that bind, once per evaluation, the names the clauses of ``specs`` read.

    A clause may read a value every clause of its family needs (``torch_sdpa``'s facts) through
    a name bound here instead of re-reading it from ``ctx`` in every clause. A binding that
    fails leaves the name bound to a sentinel, so only the clauses that read it fail.
    """
    merged: dict[str, str] = {}
    for spec in specs:
        for name, expression in spec.bindings().items():
            if merged.setdefault(name, expression) != expression:
                raise ValueError(f"Clauses bind {name!r} to two different expressions")
    namespace.setdefault("_UNBOUND", object())
    lines = []
    for name, expression in merged.items():
        lines += [f"    try: {name} = {expression}", f"    except Exception: {name} = _UNBOUND"]
    return lines


def _as_spec(other: Any) -> Spec:
    if not isinstance(other, Spec):
        raise TypeError(f"Specs combine with other Specs, not {type(other).__name__}; wrap it with Spec.of(fn, desc)")
    return other


def _check_one(part: Spec, ctx: CallContext) -> ClauseCheck:
    error = ""
    try:
        passed = part._compiled()(ctx)
    except Exception as exc:  # a predicate that raises rejects its row; the trace says why
        passed, error = False, f"{type(exc).__name__}: {exc}"
    axes = part.axes
    clause = part._clause if part._kind == "leaf" else None
    if clause is not None:
        required = clause.required
        axis_name = axes[0] if len(axes) == 1 else None
    else:
        required = part.description
        axis_name = None
    if clause is not None and clause.show is not None:
        try:
            actual = clause.show(ctx)
        except Exception as exc:
            actual = f"<cannot show: {type(exc).__name__}>"
    elif len(axes) == 1:
        actual = format_value(ctx.value_of(axes[0]))
    elif axes:
        actual = ", ".join(f"{name}={format_value(ctx.value_of(name))}" for name in axes)
    else:
        actual = str(passed)
    message = clause.message if clause is not None else ""
    if callable(message):
        try:
            message = message(ctx)
        except Exception as exc:
            message = f"<cannot word the failure: {type(exc).__name__}>"
    return ClauseCheck(part.description, axis_name, required, actual, passed, message, error)


# The clause builders over one axis live in ``axes``; imported here, after ``Spec``, which they build.
from inspector.dispatch.axes import Axis, axis  # noqa: E402

__all__ = ["Axis", "ClauseCheck", "Spec", "axis", "prologue"]
