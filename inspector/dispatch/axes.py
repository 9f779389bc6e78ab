"""Clauses over one axis of a ``CallContext`` (a standard field or a key of ``extra``).

``axis("kv_len").ge(1024)`` builds a ``Spec`` clause whose expression reads the axis and
compares it with a bound constant (see NOTE [ One evaluator ] in ``spec``).
"""

from __future__ import annotations

from typing import Any

from inspector.dispatch.context import AXES, format_value
from inspector.dispatch.spec import Spec, _Clause, _container, _set_text


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
        clause = _Clause(description, template, self._read_constants + constants, (self.name,), required)
        return Spec._leaf(clause)

    def in_(self, *values: Any) -> Spec:
        text = _set_text(values)
        return self._clause(f"{self.name} in {text}", "{v} in {c}", (_container(values),), f"in {text}")

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
