"""The root of every error the inspector raises, and the one way long work says it was cancelled.

Each engine part has its own root under ``InspectorError`` (``DispatchError``, ``BackendError``,
``LoaderError``, ``RpcError``), and each concrete error also subclasses the builtin it would
otherwise be (``KeyError``, ``ValueError``, ``OSError``...), so both ``except LoaderError`` and
``except OSError`` catch what they mean. Their text is built by ``inspector._messages.Message``
(NOTE [ Messages ]), which the error keeps as ``explanation``.
"""

from __future__ import annotations

from typing import Any

from inspector._messages import Message

__all__ = ["Cancelled", "InspectorError"]


class InspectorError(Exception):
    """Anything the inspector raises on purpose.

    Built from a ``Message`` (``raise SomeError(Message(headline, facts, next_step=...))``), the
    error's text is the message's and ``explanation`` keeps its pieces; from a plain string, it is
    ``None``.
    """

    explanation: Message | None = None

    def __init__(self, *args: Any) -> None:
        for arg in args:  # first or, for an OSError, after its errno
            if isinstance(arg, Message):
                self.explanation = arg
                break
        super().__init__(*(str(arg) if isinstance(arg, Message) else arg for arg in args))


class Cancelled(InspectorError):
    """Long work (a benchmark, starting a world, profiling) stopped because its cancel event was set.

    What was measured before the cancel is kept by whoever ran the work (see each caller).
    """
