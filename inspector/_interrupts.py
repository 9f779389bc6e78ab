"""Ctrl-C held back while ``multiprocessing`` creates named semaphores, so an interrupt cannot leak one.

A ``spawn`` context's ``Queue`` (or ``Lock``, or a ``DataLoader``'s worker queues) opens a POSIX
semaphore (``/dev/shm/sem.mp-*``) and only then registers it for clean-up, starting the resource
tracker on first use. A ``KeyboardInterrupt`` raised between the two leaves the file behind for
good. ``interrupts_deferred`` lets such a block finish, then raises the interrupt. Standard library
only: engine parts use it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Run the block with Ctrl-C (SIGINT) recorded, not raised; hand it to the previous handler after.

    Only the main thread receives ``KeyboardInterrupt``, so elsewhere (a panel's background job)
    the block simply runs. A handler installed outside Python (``getsignal`` is None) cannot be
    put back, so it is left in place.
    """
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if previous is None:
        yield
        return
    pressed: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pressed:
            if callable(previous):
                previous(signal.SIGINT, None)  # the default handler raises KeyboardInterrupt here
            else:
                signal.raise_signal(signal.SIGINT)  # SIG_DFL ends the process as Ctrl-C would; SIG_IGN ignores it
