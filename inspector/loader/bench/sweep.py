"""Tune a DataLoader: time every setting of a grid, built by your own factory, and recommend one.

``sweep_loader(make_loader, num_workers=[0, 1, 2, 4], batch_size=[32, 64], pin_memory=[False, True])``
builds each setting with ``make_loader(**setting)``, times its first batch (worker start-up
included), then ``batches`` steps after ``warmup`` (with your ``step``, when given), stopping a
setting once it has run ``time_cap_s``; meanwhile it samples the peak resident and shared memory
of this process and the workers the setting starts (``process_tree``). See NOTE [ A sweep leaves nothing behind ].

NOTE [ A sweep leaves nothing behind ]
Each setting runs between a list of this process's descendants taken before it and a check
after it: its iterator is closed and the loader dropped (the DataLoader stops its workers), then
any process it started that still runs after a bounded wait is stopped (terminate, then kill)
and named in ``stopped_workers``. That happens in a ``finally``, so it holds when the factory
raises, when a worker crashes (the DataLoader raises; the setting is kept with its error and the
sweep goes on), on Cancel (``SweepCancelled``, carrying what was measured) and on Ctrl-C.
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inspector._messages import Message
from inspector.errors import Cancelled
from inspector.loader.bench.loop import LoopProfiler
from inspector.loader.bench.process_tree import PeakSampler, descendants, stop_leftovers
from inspector.loader.bench.stats import MachineLoad, machine_load
from inspector.loader.bench.time_left import duration

if TYPE_CHECKING:
    from inspector._bench import Progress

WITHIN_BEST = 0.05  # a setting this close to the best counts as good as the best
COST_FIRST = ("num_workers", "prefetch_factor", "persistent_workers", "pin_memory")  # what costs processes/memory


@dataclass(frozen=True)
class SweepSetting:
    """One setting of the grid and what it measured (``error`` says why it has no figures)."""

    setting: dict[str, Any]
    batches_per_s: float | None = None
    samples_per_s: float | None = None
    first_batch_s: float | None = None
    batches: int = 0
    capped: bool = False
    seconds: float = 0.0
    peak_rss_bytes: int = 0
    peak_shared_bytes: int = 0
    error: str = ""
    stopped_workers: tuple[int, ...] = ()
    verdict: str | None = None  # with a step: loader-bound, compute-bound or balanced

    @property
    def ok(self) -> bool:
        return not self.error and self.batches_per_s is not None

    def name(self) -> str:
        return ", ".join(f"{key}={value!r}" for key, value in self.setting.items())

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.setting,
            "batches_per_s": self.batches_per_s,
            "samples_per_s": self.samples_per_s,
            "first_batch_s": self.first_batch_s,
            "batches": self.batches,
            "capped": self.capped,
            "seconds": self.seconds,
            "peak_rss_mib": self.peak_rss_bytes / 2**20,
            "peak_shared_mib": self.peak_shared_bytes / 2**20,
            "verdict": self.verdict,
            "error": self.error,
            "stopped_workers": len(self.stopped_workers),
        }


@dataclass(frozen=True)
class SweepResult:
    """Every setting measured, in grid order, and the one recommended with why (None when none ran)."""

    keys: tuple[str, ...]
    settings: tuple[SweepSetting, ...]
    recommended: SweepSetting | None
    reason: str
    machine: MachineLoad
    cancelled: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> Any:
        """One row per setting (the grid's values, then the figures), ``recommended`` marked; needs pandas."""
        try:
            import pandas as pd
        except ImportError as exc:  # the engine installs without pandas
            raise ImportError("SweepResult.to_frame() needs pandas: pip install 'dispatch-inspector[ui]'") from exc
        frame = pd.DataFrame.from_records([s.as_dict() for s in self.settings])
        frame["recommended"] = [s is self.recommended for s in self.settings]
        return frame

    def __repr__(self) -> str:
        ok = sum(s.ok for s in self.settings)
        best = f"; recommended {self.recommended.name()}" if self.recommended else "; nothing to recommend"
        return f"<SweepResult: {ok} of {len(self.settings)} settings ran{best}>"

    def _repr_html_(self) -> str:
        from inspector._display import html_table

        rows = [
            (
                s.name(),
                _fmt(s.samples_per_s if s.samples_per_s is not None else s.batches_per_s),
                _fmt(s.first_batch_s),
                f"{s.peak_rss_bytes / 2**20:,.0f}",
                f"{s.peak_shared_bytes / 2**20:,.0f}",
                "recommended" if s is self.recommended else (s.error or ""),
            )
            for s in self.settings
        ]
        head = ("setting", f"{self._unit()}/s", "first batch s", "peak RSS MiB", "peak shared MiB", "")
        return html_table(head, rows, self.reason)

    def _unit(self) -> str:
        return (
            "samples"
            if self.settings and all(s.samples_per_s is not None for s in self.settings if s.ok)
            else "batches"
        )


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:,.3g}" if value < 100 else f"{value:,.0f}"


class SweepCancelled(Cancelled):
    """``sweep_loader`` stopped because its ``cancel`` event was set; ``result`` holds what it measured."""

    def __init__(self, result: SweepResult) -> None:
        self.result = result
        super().__init__(f"sweep cancelled after {len(result.settings)} settings (they are kept)")


def settings_of(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the first key varying slowest."""
    for key, values in grid.items():
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise ValueError(
                f"sweep_loader: {key} must be a non-empty list of values, e.g. {key}=[0, 2]; got {values!r}"
            )
    return [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]


def sweep_loader(
    make_loader: Callable[..., Any],
    /,
    *,
    step: Callable[[Any], Any] | None = None,
    batches: int = 30,
    warmup: int = 2,
    time_cap_s: float = 20.0,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    **grid: Sequence[Any],
) -> SweepResult:
    """Time every setting of ``grid`` built by ``make_loader(**setting)``; see the module docstring.

    >>> def make(num_workers, batch_size):  # doctest: +SKIP
    ...     return DataLoader(dataset, batch_size=batch_size, num_workers=num_workers)
    >>> sweep_loader(make, num_workers=[0, 2, 4], batch_size=[32, 64]).recommended  # doctest: +SKIP
    """
    if not callable(make_loader):
        raise TypeError(
            f"make_loader must be a callable that builds a loader from a setting, got {type(make_loader).__name__}"
        )
    if not grid:
        raise ValueError("sweep_loader needs a grid, e.g. sweep_loader(make_loader, num_workers=[0, 2, 4])")
    if type(batches) is not int or batches < 1 or type(warmup) is not int or warmup < 0 or not time_cap_s > 0:
        raise ValueError(
            f"batches must be a positive int, warmup a non-negative int and time_cap_s positive; got "
            f"{batches!r}, {warmup!r}, {time_cap_s!r}"
        )
    settings = settings_of(grid)
    machine = machine_load()
    measured: list[SweepSetting] = []
    started = time.perf_counter()
    for index, setting in enumerate(settings):
        if progress is not None:
            left = ""
            if measured:
                per = (time.perf_counter() - started) / len(measured)
                left = f" ({index}/{len(settings)}, about {duration(per * (len(settings) - index))} left)"
            progress(index, len(settings), f"{_name(setting)}{left}")
        try:
            measured.append(_one(make_loader, setting, step, batches, warmup, time_cap_s, cancel))
        except Cancelled:
            raise SweepCancelled(_result(tuple(grid), measured, machine, cancelled=True)) from None
    if progress is not None:
        progress(len(settings), len(settings), "done")
    return _result(tuple(grid), measured, machine)


def _name(setting: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in setting.items())


def _one(
    make_loader: Callable[..., Any],
    setting: dict[str, Any],
    step: Callable[[Any], Any] | None,
    batches: int,
    warmup: int,
    cap: float,
    cancel: threading.Event | None,
) -> SweepSetting:
    """Measure one setting (NOTE [ A sweep leaves nothing behind ])."""
    before = descendants()
    began = time.perf_counter()
    profile, error, loader, steps, per_batch = None, "", None, None, None
    sampler = PeakSampler(exclude=before)  # workers of other loaders alive in this process are not this setting's
    try:
        with sampler:
            try:
                loader = make_loader(**setting)
            except Exception as exc:
                error = f"make_loader({_name(setting)}) raised {type(exc).__name__}: {_first_line(exc)}"
            if loader is not None:
                per_batch = _batch_size(setting, loader)
                profiler = LoopProfiler(warmup=warmup, stages=False)
                steps = profiler.iterate(loader)
                try:
                    for done, batch in enumerate(steps, start=1):
                        if cancel is not None and cancel.is_set():
                            raise Cancelled("sweep cancelled")
                        if step is not None:
                            step(batch)
                        del batch
                        if done >= warmup + batches + 1 or (done > warmup + 1 and time.perf_counter() - began > cap):
                            break
                except Cancelled:
                    raise
                except Exception as exc:  # a worker that crashed, a dataset that raised: kept as this setting's error
                    error = f"{type(exc).__name__}: {_first_line(exc)}"
                finally:
                    steps.close()
                profiler.last_batch = None
                if profiler.steps:
                    profile = profiler.result(has_step=step is not None)
                elif not error:
                    error = Message(
                        "the loader gave no batch after its warm-up", next_step="lower warmup or give more data"
                    ).one_line()
    finally:
        steps = loader = None
        gc.collect()  # a DataLoader stops its workers when its iterator is collected
        stopped = tuple(stop_leftovers(before))
    seconds = time.perf_counter() - began
    if profile is None:
        return SweepSetting(
            dict(setting),
            seconds=seconds,
            error=error,
            stopped_workers=stopped,
            peak_rss_bytes=sampler.peak_rss,
            peak_shared_bytes=sampler.peak_shared,
        )
    return SweepSetting(
        dict(setting),
        profile.batches_per_s,
        profile.batches_per_s * per_batch if per_batch else None,
        profile.first_batch_s,
        profile.batches,
        profile.batches < batches,
        seconds,
        sampler.peak_rss,
        sampler.peak_shared,
        error,
        stopped,
        profile.verdict,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _batch_size(setting: Mapping[str, Any], loader: Any) -> int | None:
    """Samples per batch: the setting's ``batch_size``, else the loader's (a DataLoader has one)."""
    for value in (setting.get("batch_size"), getattr(loader, "batch_size", None)):
        if type(value) is int and value > 0:
            return value
    return None


def _result(
    keys: tuple[str, ...], measured: list[SweepSetting], machine: MachineLoad, cancelled: bool = False
) -> SweepResult:
    chosen, reason = recommend(keys, measured)
    return SweepResult(keys, tuple(measured), chosen, reason, machine, cancelled)


def recommend(keys: Sequence[str], measured: Sequence[SweepSetting]) -> tuple[SweepSetting | None, str]:
    """The smallest setting within ``WITHIN_BEST`` of the best, and why; pure.

    Settings are compared by samples per second when every one that ran knows its batch size
    (batches of different sizes are not comparable), else by batches per second. "Smallest" is
    the fewest workers first, then the lowest prefetch, no persistent workers, no pinning, then
    each other value's place in the list you gave.
    """
    ran = [s for s in measured if s.ok]
    if not ran:
        failed = f" ({measured[0].error})" if measured and measured[0].error else ""
        step = "check that make_loader builds a loader that yields batches"
        return None, Message(f"no setting ran{failed}", next_step=step).one_line()
    by_samples = all(s.samples_per_s is not None for s in ran)
    unit = "samples/s" if by_samples else "batches/s"
    rate = (lambda s: s.samples_per_s) if by_samples else (lambda s: s.batches_per_s)
    best = max(ran, key=rate)
    good = [s for s in ran if rate(s) >= (1 - WITHIN_BEST) * rate(best)]
    order = {key: list(dict.fromkeys(s.setting[key] for s in measured)) for key in keys}

    def cost(s: SweepSetting) -> tuple[Any, ...]:
        first = [order[k].index(s.setting[k]) for k in COST_FIRST if k in order]
        rest = [order[k].index(s.setting[k]) for k in keys if k not in COST_FIRST]
        return (*first, *rest)

    chosen = min(good, key=cost)
    shown = f"{rate(chosen):,.0f} {unit}"
    if chosen is best:
        why = f"{chosen.name()}: the fastest ({shown}), and no smaller setting comes within {WITHIN_BEST:.0%} of it"
    else:
        why = (
            f"{chosen.name()}: {shown}, {rate(chosen) / rate(best):.0%} of the best ({best.name()}: "
            f"{rate(best):,.0f} {unit}), the smallest setting within {WITHIN_BEST:.0%} of the best"
        )
    return chosen, why
