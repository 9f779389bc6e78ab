"""Clauses, the leaves of a ``Spec``: each one a small expression over ``ctx``, and what checking
one against a context reports (see NOTE [ One evaluator ] in ``spec``).

Nothing here knows the ``Spec`` tree: ``spec`` builds on these pieces, and ``plan`` compiles a
family's chain from them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inspector.dispatch.context import CallContext, format_value

if TYPE_CHECKING:
    from inspector.dispatch.spec import Spec

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
class Clause:
    """One clause: its expression template, the constants it binds, the axes it reads."""

    description: str
    template: str  # expression over ``ctx``; ``{0}``, ``{1}``... are bound constants
    constants: tuple[Any, ...]
    axes: tuple[str, ...]
    required: str
    message: str | Callable[[CallContext], str] = ""  # a callable words the failure from the context
    show: Callable[[CallContext], str] | None = None  # the actual value(s), for traces
    bindings: tuple[tuple[str, str], ...] = ()  # (name, expression over ctx) the template reads, see prologue()


def namespace_binder(namespace: dict[str, Any]) -> Binder:
    counter = itertools.count(len(namespace))

    def bind(value: Any) -> str:
        name = f"_k{next(counter)}"
        namespace[name] = value
        return name

    return bind


def set_text(values: Iterable[Any]) -> str:
    return "{" + ", ".join(format_value(v) for v in values) + "}"


def container(values: tuple[Any, ...]) -> Any:
    try:
        return frozenset(values)
    except TypeError:  # unhashable values still work, by equality
        return values


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


def check_clause(part: Spec, ctx: CallContext) -> ClauseCheck:
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
