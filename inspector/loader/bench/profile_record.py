"""What ``profile_loader`` and ``LoopProfiler`` measured: the ``LoaderProfile`` record, and the bytes of a batch."""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inspector.loader.bench.host_to_device import HostToDevice, leaves
from inspector.loader.bench.stage_split import STAGE_TITLES, StageSplit
from inspector.loader.bench.stats import MachineLoad, Spread
from inspector.loader.bench.verdict import WaitShare, speedup_if_data_free, verdict_of, verdict_words

OURS_LABEL = "inspector loader, I/O only: your dataset's work excluded"


@dataclass(frozen=True)
class LoaderProfile:
    """What ``profile_loader`` measured: first batch, per-batch times and bytes, and H2D copies where CUDA exists.

    It shows itself as a table (``repr``, ``_repr_html_``, ``to_frame()``); its chart is drawn on the view side,
    ``inspector.views.loader.profile_figure(profile)`` (several profiles side by side, too), because the engine
    imports no plotting library.
    """

    name: str
    first_batch_s: float
    batch_seconds: tuple[float, ...]
    batch_bytes: tuple[int, ...]
    warmup: int
    exhausted: bool  # the iterable ended before ``batches`` batches were timed
    machine: MachineLoad
    h2d: HostToDevice | None = None
    label: str = ""  # what the profile is of, for tables that compare profiles
    extra: dict[str, Any] = field(default_factory=dict)
    wait_seconds: tuple[float, ...] = ()  # per timed step: the wait for its batch
    compute_seconds: tuple[float, ...] = ()  # per timed step: the step's own time (empty without a step)
    stages: StageSplit | None = None  # where a DataLoader's batch spends its time

    # -- the verdict (NOTE [ Loader-bound or compute-bound ]) ------------------------------------
    @property
    def has_step(self) -> bool:
        return len(self.compute_seconds) == len(self.wait_seconds) > 0

    @property
    def data_wait_share(self) -> WaitShare | None:
        """The share of wall time spent waiting for the next batch, with its spread (None without a step)."""
        from inspector.loader.bench.verdict import wait_share

        return wait_share(self.wait_seconds, self.compute_seconds) if self.has_step else None

    @property
    def verdict(self) -> str | None:
        """``loader-bound``, ``compute-bound`` or ``balanced`` (None without a step to compare the waits with)."""
        share = self.data_wait_share
        return verdict_of(share.value) if share is not None else None

    @property
    def step_time(self) -> Spread | None:
        """Seconds per step, wait for data included."""
        return Spread.of(self.batch_seconds) if self.batch_seconds else None

    @property
    def step_if_data_free(self) -> Spread | None:
        """Seconds per step if every batch were there at once: the step's compute alone."""
        return Spread.of(self.compute_seconds) if self.has_step else None

    def verdict_text(self) -> str:
        """The verdict in words, with what to change next ("" without a step)."""
        share, step, free = self.data_wait_share, self.step_time, self.step_if_data_free
        if share is None or step is None or free is None:
            return ""
        stage = None
        if self.stages is not None and self.stages.stages:
            name = self.stages.largest()
            stage = (STAGE_TITLES[name], self.stages.stages[name].median)
        workers = self.stages.workers if self.stages is not None else self.extra.get("workers")
        return verdict_words(
            share,
            sum(self.batch_seconds) / self.batches,
            sum(self.compute_seconds) / self.batches,
            workers,
            stage,
            self.machine.cores,
        )

    @property
    def batches(self) -> int:
        return len(self.batch_seconds)

    @property
    def seconds(self) -> float:
        return float(sum(self.batch_seconds))

    @property
    def batches_per_s(self) -> float:
        return self.batches / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mb_per_s(self) -> float:
        """MiB (2**20 bytes) of tensors and arrays delivered per second."""
        return sum(self.batch_bytes) / 2**20 / self.seconds if self.seconds > 0 else float("nan")

    @property
    def per_batch(self) -> Spread | None:
        return Spread.of(self.batch_seconds) if self.batch_seconds else None

    def summary(self) -> dict[str, Any]:
        """The headline figures as one flat record (for tables and JSON)."""
        spread = self.per_batch
        share = self.data_wait_share
        free = self.step_if_data_free
        return {
            "loader": self.label or self.name,
            "batches": self.batches,
            "first_batch_s": self.first_batch_s,
            "batches_per_s": self.batches_per_s,
            "mb_per_s": self.mb_per_s,
            "batch_ms_median": spread.median * 1e3 if spread else None,
            "batch_ms_min": spread.min * 1e3 if spread else None,
            "batch_ms_max": spread.max * 1e3 if spread else None,
            "mb_per_batch": (sum(self.batch_bytes) / len(self.batch_bytes) / 2**20) if self.batch_bytes else 0.0,
            "h2d_pageable_ms": self.h2d.pageable_s.median * 1e3 if self.h2d else None,
            "h2d_pinned_ms": self.h2d.pinned_s.median * 1e3 if self.h2d else None,
            "verdict": self.verdict,
            "data_wait_share": share.value if share else None,
            "data_wait_share_min": share.min if share else None,
            "data_wait_share_max": share.max if share else None,
            "step_ms_if_data_free": free.median * 1e3 if free else None,
            "speedup_if_data_free": speedup_if_data_free(share.value) if share else None,
            "busy_machine": self.machine.busy,
        }

    def job_record(self) -> dict[str, Any]:
        """The headline figures and verdict as a plain record for ``inspector.rpc.gather`` (``bench.job_record``)."""
        from inspector.loader.bench.job_record import job_record

        return job_record(self)

    def to_frame(self) -> Any:
        """One row per timed batch (``batch``, ``seconds``, ``bytes``, ``mb_per_s``; with a step also
        ``wait_s`` and ``compute_s``) as a pandas DataFrame.

        Needs pandas (the ``[ui]`` extra); the engine itself does not.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # the engine installs without pandas
            raise ImportError("LoaderProfile.to_frame() needs pandas: pip install 'dispatch-inspector[ui]'") from exc
        seconds = np.asarray(self.batch_seconds, float)
        nbytes = np.asarray(self.batch_bytes, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = nbytes / 2**20 / seconds
        frame = pd.DataFrame(
            {
                "batch": np.arange(1, self.batches + 1),
                "seconds": seconds,
                "bytes": nbytes.astype(np.int64),
                "mb_per_s": rate,
            }
        )
        if self.has_step:
            frame["wait_s"] = np.asarray(self.wait_seconds, float)
            frame["compute_s"] = np.asarray(self.compute_seconds, float)
        return frame

    def __repr__(self) -> str:
        ended = ", iterable ended early" if self.exhausted else ""
        share = self.data_wait_share
        verdict = f", {self.verdict} ({share.value:.0%} waiting for data)" if share is not None else ""
        return (
            f"<LoaderProfile {self.label or self.name}: {self.batches} batches, first {self.first_batch_s:.3g} s, "
            f"{self.batches_per_s:,.1f} batches/s, {self.mb_per_s:,.1f} MiB/s{verdict}{ended}>"
        )

    def _repr_html_(self) -> str:
        from inspector._display import html_table

        summary = self.summary()
        rows = []
        if self.has_step:
            rows.append(("verdict", self.verdict_text()))
        rows += [
            (
                "batches timed",
                f"{self.batches} (after {self.warmup} warm-up)"
                + (" — the iterable ended early" if self.exhausted else ""),
            ),
            ("first batch", f"{self.first_batch_s:.3g} s (start-up included)"),
            ("batches/s", f"{self.batches_per_s:,.1f}"),
            ("MiB/s", f"{self.mb_per_s:,.1f} ({summary['mb_per_batch']:.3g} MiB per batch)"),
        ]
        spread = self.per_batch
        if spread is not None:
            rows.append(
                (
                    "ms per batch",
                    f"median {spread.median * 1e3:.3g} [min {spread.min * 1e3:.3g}, max {spread.max * 1e3:.3g}]",
                )
            )
        if self.h2d is not None:
            rows.append(
                (
                    f"to {self.h2d.device}",
                    f"pageable {self.h2d.pageable_s.median * 1e3:.3g} ms, pinned "
                    f"{self.h2d.pinned_s.median * 1e3:.3g} ms (pinning "
                    f"{self.h2d.pin_s.median * 1e3:.3g} ms)",
                )
            )
        if self.stages is not None:
            shown = ", ".join(f"{name} {spread.median * 1e3:.3g}" for name, spread in self.stages.stages.items())
            rows.append(("ms per batch by stage", shown))
        note = self.machine.note()
        table = html_table((), rows, css_class="", row_headers=True)
        foot = f"<p><i>{html.escape(note)}</i></p>" if note else ""
        title = html.escape(self.label or self.name)
        return f"<div class='inspector-loader-profile'><b>{title}</b>{table}{foot}</div>"


def batch_nbytes(batch: Any) -> int:
    """Bytes of every tensor and array in ``batch``, at any depth of nesting."""
    total = 0
    torch = sys.modules.get("torch")
    for leaf in leaves(batch):
        if isinstance(leaf, np.ndarray | np.generic):
            total += int(leaf.nbytes)
        elif torch is not None and isinstance(leaf, torch.Tensor):
            total += int(leaf.numel() * leaf.element_size())
    return total
