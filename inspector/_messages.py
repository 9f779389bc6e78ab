"""Error text built, not hand-written: a headline, ``key = value`` facts and the next step.

NOTE [ Messages ]
Every error the inspector raises on purpose reads the same way::

    Worker 1 of loader 'x' died while loading 'a.pkl' (exit code -9).
    worker = 1
    file = a.pkl
    next step = load again: a new worker has taken its place

A ``Message`` is that text as data. Its ``str`` is the text (facts without a value are left
out); its pieces stay readable, so a view shows a fact or the next step by reading an attribute,
never by parsing the text back. An error of a part passes a ``Message`` to its constructor and
``InspectorError`` keeps it as ``explanation`` (``exc.explanation.next_step``); a record that is
not an exception (a device-map problem) keeps its own. Misuse of an API (an argument of the wrong
type or value) raises the builtin ``TypeError`` or ``ValueError`` with ``str(message)``, as
Python's own functions do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Message", "explanation_of"]

NEXT_STEP = "next step"
EMPTY = (None, "", ())


def _pairs(facts: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> tuple[tuple[str, str], ...]:
    items = facts.items() if isinstance(facts, Mapping) else facts
    return tuple((str(key), str(value)) for key, value in items if not _empty(value))


def _empty(value: Any) -> bool:
    try:
        return any(value is empty or value == empty for empty in EMPTY)
    except Exception:  # a value that refuses comparison (an array) is a value
        return False


@dataclass(frozen=True, init=False)
class Message:
    """An error's text as data (NOTE [ Messages ]): ``headline``, ``facts`` in order, ``next_step``.

    ``notes`` are lines of their own between the facts and the next step, for what is not a fact.

    Example::

        >>> print(Message("No loader is running.", {"loader": "x", "pid": None}, next_step="start() it"))
        No loader is running.
        loader = x
        next step = start() it
    """

    headline: str
    facts: tuple[tuple[str, str], ...]
    next_step: str
    notes: tuple[str, ...]

    def __init__(
        self,
        headline: str,
        facts: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
        *,
        next_step: str = "",
        notes: Iterable[str] = (),
    ) -> None:
        object.__setattr__(self, "headline", headline)
        object.__setattr__(self, "facts", _pairs(facts))
        object.__setattr__(self, "next_step", next_step)
        object.__setattr__(self, "notes", tuple(note for note in notes if note))

    def fact(self, key: str) -> str:
        """The value of fact ``key``; ``KeyError`` lists the facts there are."""
        for name, value in self.facts:
            if name == key:
                return value
        raise KeyError(f"No fact {key!r} in this message. Facts: {[name for name, _ in self.facts]}")

    @property
    def details(self) -> tuple[str, ...]:
        """Every line after the headline: the facts, the notes, then the next step."""
        lines = [f"{key} = {value}" for key, value in self.facts] + list(self.notes)
        return (*lines, f"{NEXT_STEP} = {self.next_step}") if self.next_step else tuple(lines)

    def __str__(self) -> str:
        return "\n".join((self.headline, *self.details))

    def one_line(self) -> str:
        """The text on one line, its lines joined with ``; `` (a command line's usage error)."""
        return "; ".join((self.headline, *self.details))


def explanation_of(error: BaseException) -> Message | None:
    """The ``Message`` an error was built from, if it was (``InspectorError.explanation``)."""
    found = getattr(error, "explanation", None)
    return found if isinstance(found, Message) else None
