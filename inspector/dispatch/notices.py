"""Warn-once bookkeeping for soft failures (malformed env entries, selections that fall through)."""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("inspector.dispatch")

_seen: set[str] = set()
_lock = threading.Lock()


def warn_once(message: str, key: str | None = None) -> bool:
    """Log ``message`` as a warning the first time ``key`` (default: the message) is seen."""
    key = message if key is None else key
    with _lock:
        if key in _seen:
            return False
        _seen.add(key)
    logger.warning(message)
    return True


def reset_notices() -> None:
    """Forget which warnings were given (tests and ``reload_env``-style fresh starts)."""
    with _lock:
        _seen.clear()
