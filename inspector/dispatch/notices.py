"""Warn-once bookkeeping for soft failures (malformed env entries, selections that fall through).

The memory belongs to the dispatch registry (``registry.notices``), so isolating the registry
for a test forgets which warnings were given along with everything else.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("inspector.dispatch")


class Notices:
    """Which soft-failure warnings were given, so each is logged once."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def warn_once(self, message: str, key: str | None = None) -> bool:
        """Log ``message`` as a warning the first time ``key`` (default: the message) is seen."""
        key = message if key is None else key
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
        logger.warning(message)
        return True

    def seen(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._seen)

    def reset(self, seen: frozenset[str] = frozenset()) -> None:
        """Forget which warnings were given (or remember exactly ``seen``)."""
        with self._lock:
            self._seen = set(seen)
