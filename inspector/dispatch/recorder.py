"""An opt-in, bounded log of the decisions ``resolve`` actually took.

It answers "which implementation ran?" from the code path that ran, not from a replay.
Contexts are stored without their raw arguments so a recorder never keeps tensors alive.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inspector.dispatch.registry import REGISTRY

if TYPE_CHECKING:
    from inspector.dispatch.context import CallContext
    from inspector.dispatch.records import Resolution

# The running recorders and the one stopped last live on the registry (NOTE [ Dispatch state ]);
# resolve reads ACTIVE on every call, so both lists are changed in place, never replaced.
ACTIVE: list[DecisionRecorder] = REGISTRY.recorders
_LAST_STOPPED: list[DecisionRecorder] = REGISTRY.last_stopped
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Decision:
    """One resolution as it happened."""

    family: str
    row: str
    origin: str
    context: CallContext
    thread: str
    at: float


@dataclass(frozen=True, slots=True)
class DecisionCount:
    family: str
    row: str
    origin: str
    count: int


class DecisionRecorder:
    """Keeps the last ``maxlen`` decisions while started; use as a context manager or start/stop."""

    def __init__(self, maxlen: int = 1000) -> None:
        if maxlen < 1:
            raise ValueError(f"maxlen must be at least 1, got {maxlen}")
        self.maxlen = maxlen
        self._log: deque[Decision] = deque(maxlen=maxlen)
        self._total = 0
        self._count_lock = threading.Lock()

    @property
    def recording(self) -> bool:
        return self in ACTIVE

    def start(self) -> DecisionRecorder:
        with _lock:
            if self not in ACTIVE:
                ACTIVE.append(self)
        return self

    def stop(self) -> DecisionRecorder:
        with _lock:
            if self in ACTIVE:
                ACTIVE.remove(self)
                _LAST_STOPPED[:] = [self]
        return self

    def __repr__(self) -> str:
        state = "recording" if self.recording else "stopped"
        top = ", ".join(f"{c.family}/{c.row} x{c.count}" for c in self.counts()[:3])
        return f"<DecisionRecorder {state}: {self.total} decision(s){': ' + top if top else ''}>"

    def _repr_html_(self) -> str:
        from inspector._display import html_table

        rows = [(c.family, c.row, c.origin, c.count) for c in self.counts()]
        if not rows:
            return "<p>No decisions recorded.</p>"
        return html_table(("family", "row", "origin", "decisions"), rows)

    def __enter__(self) -> DecisionRecorder:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def note(self, resolution: Resolution, ctx: CallContext) -> None:
        with self._count_lock:  # resolve runs on any thread; ``+=`` alone can lose counts
            self._total += 1
        self._log.append(
            Decision(
                resolution.record.family,
                resolution.record.name,
                resolution.origin,
                ctx.without_raw(),
                threading.current_thread().name,
                time.time(),
            )
        )

    def decisions(self) -> tuple[Decision, ...]:
        """The retained decisions, oldest first."""
        return tuple(self._log)

    @property
    def total(self) -> int:
        """Decisions seen since start, including those no longer retained."""
        return self._total

    def counts(self) -> tuple[DecisionCount, ...]:
        """Retained decisions grouped by (family, row, origin), most frequent first."""
        tally = Counter((d.family, d.row, d.origin) for d in self._log)
        return tuple(DecisionCount(f, r, o, n) for (f, r, o), n in tally.most_common())

    def clear(self) -> None:
        with self._count_lock:
            self._log.clear()
            self._total = 0


def record_decisions(maxlen: int = 1000) -> DecisionRecorder:
    """Start recording: ``with record_decisions() as rec: train_step(); rec.counts()``."""
    return DecisionRecorder(maxlen).start()


def last_stopped() -> DecisionRecorder | None:
    """The recorder stopped most recently (the Dispatch tab's "What ran" shows it after its block)."""
    return _LAST_STOPPED[0] if _LAST_STOPPED else None


def note_all(resolution: Resolution, ctx: CallContext) -> None:
    for recorder in tuple(ACTIVE):
        recorder.note(resolution, ctx)
