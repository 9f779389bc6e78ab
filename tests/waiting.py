"""Bounded waits for tests: one generous bound, and waiting on a condition instead of sleeping.

Imported as ``waiting`` (this folder is on ``sys.path`` through ``tests/conftest.py``). The bound
is generous because the suite runs on busy 2-core machines; a test never relies on it being
reached quickly, only on it being reached at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
WAIT_S = 60.0  # a worker, a future or a process answers well within this on any machine we run on
PROCESS_WAIT_S = 120.0  # a fresh Python process that imports torch, on a busy 2-core machine
RUN_WAIT_S = 300.0  # a whole benchmark run in a subprocess


def wait_until(condition: Callable[[], T], timeout: float = WAIT_S, interval: float = 0.02, what: str = "") -> T:
    """Poll ``condition`` until it returns something truthy (returned); ``TimeoutError`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"still waiting after {timeout} s{': ' + what if what else ''}")
        time.sleep(interval)
