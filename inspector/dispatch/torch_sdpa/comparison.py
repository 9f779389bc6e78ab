"""What ``compare`` measured: every backend's times, memory and error, and whether PyTorch's pick is the fastest."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Milliseconds per call after warm-up: the median, the fastest and the slowest run."""

    median_ms: float
    min_ms: float
    max_ms: float
    runs: int

    def __str__(self) -> str:
        return f"{self.median_ms:.3g} ms ({self.min_ms:.3g}–{self.max_ms:.3g}, {self.runs} runs)"


@dataclass(frozen=True)
class BackendRun:
    """One backend on the call: ``ran`` (timed), ``cannot serve`` (not run, with PyTorch's reason) or ``failed``."""

    backend: str
    status: str
    reason: str
    forward: Timing | None = None
    backward: Timing | None = None
    memory_bytes: int | None = None
    memory_kind: str = ""  # "peak": the most bytes held at once (CUDA's allocator, or torch.profiler on CPU)
    max_abs_error: float | None = None  # against math in float64
    max_rel_error: float | None = None
    grad_max_abs_error: float | None = None
    grad_max_rel_error: float | None = None
    warmup_runs: int = 0  # runs before the timed ones, until the times settled

    @property
    def total_ms(self) -> float | None:
        """Median forward time, plus the median backward time when the call was timed with backward."""
        if self.forward is None:
            return None
        return self.forward.median_ms + (self.backward.median_ms if self.backward is not None else 0.0)


NOISE = 0.1  # differences under this share of the slower time, or under the runs' own spread, are noise


def _spread(run: BackendRun) -> float:
    """How far a backend's median sits above its fastest run: the noise of its timings."""
    spread = 0.0
    for timing in (run.forward, run.backward):
        if timing is not None:
            spread += timing.median_ms - timing.min_ms
    return spread


def within_noise(a: BackendRun, b: BackendRun) -> bool:
    """Whether two timed backends differ by no more than the noise of their runs."""
    ta, tb = a.total_ms or 0.0, b.total_ms or 0.0
    return abs(ta - tb) <= max(NOISE * max(ta, tb), _spread(a) + _spread(b))


COLUMNS = [
    "backend",
    "status",
    "pick",
    "forward_ms",
    "forward_min_ms",
    "forward_max_ms",
    "backward_ms",
    "total_ms",
    "runs",
    "memory_bytes",
    "memory_kind",
    "max_abs_error",
    "max_rel_error",
    "grad_max_abs_error",
    "grad_max_rel_error",
    "warmup_runs",
    "reason",
]


@dataclass(frozen=True)
class SdpaComparison:
    """Every backend PyTorch has for one call, run the same way and measured in one go."""

    call: str
    pick: str  # what PyTorch runs for the call under the flags in force ("error" where it refuses)
    runs: tuple[BackendRun, ...]
    backward: bool
    budget_s: float
    notes: tuple[str, ...] = ()

    def ran(self) -> tuple[BackendRun, ...]:
        return tuple(r for r in self.runs if r.status == "ran" and r.total_ms is not None)

    @property
    def fastest(self) -> str | None:
        ran = self.ran()
        return min(ran, key=lambda r: r.total_ms or 0.0).backend if ran else None

    def run(self, backend: str) -> BackendRun:
        for run in self.runs:
            if run.backend == backend:
                return run
        raise KeyError(f"No backend {backend!r} in this comparison. Backends: {[r.backend for r in self.runs]}")

    @property
    def pick_is_fastest(self) -> bool | None:
        """Whether PyTorch's own pick was the fastest backend measured (``None`` when not both ran)."""
        fastest = self.fastest
        if fastest is None or self.pick not in {r.backend for r in self.ran()}:
            return None
        return fastest == self.pick

    @property
    def about_the_same(self) -> str | None:
        """The backend whose time is within the noise of PyTorch's pick's, where the verdict
        would otherwise turn on noise: the fastest when it is not the pick, else the runner-up."""
        if self.pick_is_fastest is None:
            return None
        pick = self.run(self.pick)
        others = sorted((r for r in self.ran() if r.backend != self.pick), key=lambda r: r.total_ms or 0.0)
        if not others:
            return None
        return others[0].backend if within_noise(pick, others[0]) else None

    @property
    def saving_ms(self) -> float | None:
        """What running the fastest backend instead of PyTorch's pick saves per call (0 when it is the pick)."""
        if self.pick_is_fastest is None:
            return None
        pick, fastest = self.run(self.pick).total_ms, self.run(self.fastest or "").total_ms
        return max((pick or 0.0) - (fastest or 0.0), 0.0)

    def summary(self) -> str:
        """One sentence: PyTorch's pick, whether it is the fastest, and what the fastest would save."""
        what = "forward and backward" if self.backward else "forward"
        ran = self.ran()
        if not ran:
            return f"No backend could be timed for this call ({what})."
        fastest = self.run(self.fastest or "")
        if self.pick == "error":
            return (
                f"PyTorch refuses this call under the flags in force; of the backends that can serve it, "
                f"{fastest.backend} is the fastest ({fastest.total_ms:.3g} ms per call, {what})."
            )
        if self.pick_is_fastest is None:
            return f"PyTorch picks {self.pick}, which could not be timed; {fastest.backend} is the fastest timed."
        pick = self.run(self.pick)
        same = self.about_the_same
        if same is not None:
            other = self.run(same)
            return (
                f"PyTorch picks {self.pick}, and {same} is about the same ({what}: {pick.total_ms:.3g} ms against "
                f"{other.total_ms:.3g} ms per call, within the noise of these runs): nothing to gain by switching."
            )
        if self.pick_is_fastest:
            others = [r for r in ran if r.backend != self.pick]
            slower = ", ".join(f"{r.backend} {(r.total_ms or 0) / (pick.total_ms or 1):.2g}x slower" for r in others)
            return (
                f"PyTorch picks {self.pick}, and it is the fastest of the {len(ran)} backend(s) that can serve "
                f"this call ({what}: {pick.total_ms:.3g} ms per call" + (f"; {slower}" if slower else "") + ")."
            )
        saving = self.saving_ms or 0.0
        return (
            f"PyTorch picks {self.pick}, but {fastest.backend} is faster: {fastest.total_ms:.3g} ms instead of "
            f"{pick.total_ms:.3g} ms per call ({what}), saving {saving:.3g} ms "
            f"({saving / (pick.total_ms or 1):.0%})."
        )

    def rows(self) -> list[dict[str, Any]]:
        lines = []
        for r in self.runs:
            line = asdict(r)
            forward, backward = r.forward, r.backward
            line.update(
                pick=r.backend == self.pick,
                forward_ms=None if forward is None else forward.median_ms,
                forward_min_ms=None if forward is None else forward.min_ms,
                forward_max_ms=None if forward is None else forward.max_ms,
                backward_ms=None if backward is None else backward.median_ms,
                total_ms=r.total_ms,
                runs=None if forward is None else forward.runs,
            )
            lines.append({name: line.get(name) for name in COLUMNS})
        return lines

    def to_frame(self) -> Any:
        """The comparison as a pandas ``DataFrame`` (needs pandas: ``pip install dispatch-inspector[ui]``)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("SdpaComparison.to_frame needs pandas: pip install 'dispatch-inspector[ui]'") from exc
        frame = pd.DataFrame(self.rows(), columns=COLUMNS)
        frame.attrs.update(call=self.call, pick=self.pick, summary=self.summary(), notes=self.notes)
        return frame

    def __str__(self) -> str:
        lines = [f"torch_sdpa.compare: {self.call}", f"  {self.summary()}"]
        for r in self.runs:
            mark = " <- PyTorch's pick" if r.backend == self.pick else ""
            if r.status != "ran":
                lines.append(f"  {r.backend}: {r.status} ({r.reason}){mark}")
                continue
            parts = [f"forward {r.forward}"]
            if r.backward is not None:
                parts.append(f"backward {r.backward}")
            if r.memory_bytes is not None:
                parts.append(f"{r.memory_kind} {r.memory_bytes / 2**20:.3g} MiB")
            if r.max_abs_error is not None:
                parts.append(f"max abs error {r.max_abs_error:.2g}, rel {r.max_rel_error:.2g}")
            if r.grad_max_abs_error is not None:
                parts.append(f"grad max abs error {r.grad_max_abs_error:.2g}")
            lines.append(f"  {r.backend}: " + "; ".join(parts) + mark)
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<SdpaComparison {self.call}: pick {self.pick}, fastest {self.fastest}; print() for every backend>"

    def _repr_html_(self) -> str:
        head = "".join(
            f"<th>{html.escape(n)}</th>"
            for n in ("backend", "status", "forward", "backward", "memory", "max abs error", "max rel error", "reason")
        )
        body = []
        for r in self.runs:
            cells = [
                r.backend + (" ★" if r.backend == self.pick else ""),
                r.status,
                str(r.forward or "—"),
                str(r.backward or "—"),
                "—" if r.memory_bytes is None else f"{r.memory_kind} {r.memory_bytes / 2**20:.3g} MiB",
                "—" if r.max_abs_error is None else f"{r.max_abs_error:.2g}",
                "—" if r.max_rel_error is None else f"{r.max_rel_error:.2g}",
                r.reason or "—",
            ]
            body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        caption = html.escape(self.summary())
        rows = "".join(body)
        return f"<table class='inspector-sdpa-compare'><caption>{caption}</caption><tr>{head}</tr>{rows}</table>"
