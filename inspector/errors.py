"""The root of every error the inspector raises, and the one way long work says it was cancelled.

Each engine part has its own root under ``InspectorError`` (``DispatchError``, ``BackendError``,
``LoaderError``, ``RpcError``), and each concrete error also subclasses the builtin it would
otherwise be (``KeyError``, ``ValueError``, ``OSError``...), so both ``except LoaderError`` and
``except OSError`` catch what they mean.
"""

from __future__ import annotations

__all__ = ["Cancelled", "InspectorError"]


class InspectorError(Exception):
    """Anything the inspector raises on purpose."""


class Cancelled(InspectorError):
    """Long work (a benchmark, starting a world, profiling) stopped because its cancel event was set.

    What was measured before the cancel is kept by whoever ran the work (see each caller).
    """
