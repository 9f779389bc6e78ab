"""Dispatch errors: each names the next step and carries the offending values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from inspector._messages import Message
from inspector.errors import InspectorError

if TYPE_CHECKING:
    from inspector.dispatch.clauses import ClauseCheck


class DispatchError(InspectorError):
    """The root of every error ``inspector.dispatch`` raises on purpose."""


class UnknownFamilyError(DispatchError, KeyError, ValueError):
    """No family of that name. A ``KeyError`` for lookups and a ``ValueError`` for ``op_backend``."""

    def __init__(self, family: str, known: Sequence[str]) -> None:
        self.family = family
        self.known = sorted(known)
        message = Message(
            f"No operator family registered under {family!r}. Known: {self.known}.",
            next_step="register it with register_family(), or import the module that defines it "
            "(the embedded ones come with `import inspector.examples`)",
        )
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownImplementationError(DispatchError, ValueError):
    """A selection names a row the family does not have."""

    def __init__(self, family: str, name: str, known: Sequence[str]) -> None:
        self.family = family
        self.name = name
        self.known = list(known)
        super().__init__(f"Unknown {family} implementation: {name!r}. Known: {self.known}")


def _failure_facts(failures: Sequence[ClauseCheck], available: bool) -> list[tuple[str, object]]:
    facts: list[tuple[str, object]] = [] if available else [("available", "False (this machine cannot run it)")]
    return facts + [("failing", check) for check in failures]


class ExplicitSelectionError(DispatchError, RuntimeError):
    """An explicit or context selection names a row that cannot handle this call."""

    def __init__(
        self,
        family: str,
        row: str,
        origin: str,
        failures: Sequence[ClauseCheck],
        available: bool,
        capable: Sequence[str],
        context: str,
    ) -> None:
        self.family = family
        self.row = row
        self.origin = origin
        self.failures = tuple(failures)
        self.available = available
        self.capable = list(capable)
        how = "passed explicitly" if origin == "explicit" else "selected with op_backend"
        facts = [("context", context), *_failure_facts(self.failures, available), ("capable rows", self.capable)]
        message = Message(
            f"{family} row {row!r} ({how}) cannot handle this call.",
            facts,
            next_step="select one of the capable rows, or drop the selection so the chain decides "
            f"(explain({family!r}, ctx) shows every row's verdict)",
        )
        super().__init__(message)


class NoImplementationError(DispatchError, RuntimeError):
    """Neither a row nor the family fallback can handle this call."""

    def __init__(self, family: str, fallback: str, reasons: Sequence[tuple[str, str]], context: str) -> None:
        self.family = family
        self.fallback = fallback
        self.reasons = tuple(reasons)
        message = Message(
            f"No {family} implementation can handle this call (not even the fallback {fallback!r}).",
            [("context", context), *self.reasons],
            next_step="relax the fallback's spec, or register a row that handles this context",
        )
        super().__init__(message)
