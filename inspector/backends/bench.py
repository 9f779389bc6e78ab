"""Backend-registry costs against plain baselines, measured in one run.

What the registry adds on the paths training code takes (look up a backend, fetch a verb) and
what the one-time plugin scan costs. No target comes with the part; the targets here are the
budgets the project holds itself to, so a regression shows as MISS. Times are the best of
``rounds`` (µs per call), on a private registry holding one small backend.
"""

from __future__ import annotations

import timeit
from types import ModuleType
from typing import Any

from inspector._bench import Measurement, Progress, time_steps
from inspector.backends._registry import BackendRegistry


def _backend() -> ModuleType:
    module = ModuleType("inspector_bench_backend")

    def build(cfg: Any, ctx: Any) -> Any:
        """Build nothing: only lookups are measured."""
        return None

    def describe(cfg: Any) -> str:
        """A verb to fetch."""
        return "bench"

    module.build, module.describe = build, describe  # type: ignore[attr-defined]
    module.__verbs__ = ("build", "describe")  # type: ignore[attr-defined]
    return module


def measure(rounds: int = 7, progress: Progress | None = None) -> list[Measurement]:
    """Lookup plus verb against a plain dict with ``getattr``; the active backend; the plugin scan."""
    registry = BackendRegistry(discover_plugins=False)
    backend = _backend()
    registry.register_module("bench", backend)
    registry.load_config({"data": {"dataset_type": "bench"}})
    namespace = {"plain": {"bench": backend}, "registry": registry}
    steps = [
        ("plain", "getattr(plain['bench'], 'describe')", 300_000),
        ("lookup", "registry.backend_for('bench').describe", 100_000),
        ("active", "registry.data_backend().describe", 100_000),
    ]
    t = time_steps(steps, namespace, rounds, progress, "backends", total=len(steps) + 1)
    if progress is not None:
        progress(len(steps), len(steps) + 1, "backends: plugin scan")
    scans = []
    for _ in range(3):
        start = timeit.default_timer()
        BackendRegistry().available_backends()  # reads every installed distribution's entry points
        scans.append((timeit.default_timer() - start) * 1e3)
    if progress is not None:
        progress(len(steps) + 1, len(steps) + 1, "backends: done")
    ratio = t["lookup"] / t["plain"]
    return [
        Measurement(
            "backends",
            "backend_for(name).verb",
            t["lookup"],
            "µs",
            "plain dict + getattr",
            t["plain"],
            ratio,
            "a plain dict",
            "<= 0.75 µs and <= 15x",
            t["lookup"] <= 0.75 and ratio <= 15,
        ),
        Measurement("backends", "data_backend().verb", t["active"], "µs", target="<= 0.75 µs", ok=t["active"] <= 0.75),
        Measurement(
            "backends",
            "first lookup's plugin scan (once per registry)",
            min(scans),
            "ms",
            target="<= 50 ms",
            ok=min(scans) <= 50,
        ),
    ]
