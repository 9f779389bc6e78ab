"""Backend-registry costs against plain baselines measured in the same run.

    python benchmarks/backends.py

Issue 3 sets no speed targets; these lines show what the registry adds on the paths training
code takes (look up a backend, fetch a verb) and what the one-time plugin scan costs. The
"target" column holds the budgets we hold ourselves to, so a regression shows up as MISS.
Times are the best of several rounds.
"""

from __future__ import annotations

import sys
import timeit

import inspector.examples.data_backends as demos
from inspector.backends import BackendRegistry, backend_for, data_backend, isolated_registry, load_config

ROUNDS = 7


def per_call_us(statement: str, namespace: dict, number: int) -> float:
    return min(timeit.repeat(statement, globals=namespace, number=number, repeat=ROUNDS)) / number * 1e6


def measure() -> dict[str, float]:
    plain = {"synthetic": demos.synthetic, "npz": demos.npz}
    namespace = {"plain": plain, "module": demos.synthetic, "backend_for": backend_for, "data_backend": data_backend}
    times = {
        "attribute": per_call_us("module.describe", namespace, 500_000),
        "plain_dict": per_call_us("getattr(plain['synthetic'], 'describe')", namespace, 500_000),
        "backend_for": per_call_us("backend_for('synthetic').describe", namespace, 200_000),
        "data_backend": per_call_us("data_backend().describe", namespace, 200_000),
    }
    rounds = []
    for _ in range(3):
        start = timeit.default_timer()
        BackendRegistry().available_backends()  # reads every installed distribution's entry points
        rounds.append((timeit.default_timer() - start) * 1e3)
    times["plugin_scan_ms"] = min(rounds)
    return times


def report(t: dict[str, float]) -> list[tuple[str, str, bool]]:
    ratio = t["backend_for"] / t["plain_dict"]
    return [
        (f"module.describe (attribute): {t['attribute']:.3f} µs", "-", True),
        (f"plain dict + getattr: {t['plain_dict']:.3f} µs", "-", True),
        (f"backend_for('synthetic').describe: {t['backend_for']:.3f} µs", "<= 0.75 µs", t["backend_for"] <= 0.75),
        (f"  vs plain dict + getattr: {ratio:.1f}x", "<= 15x", ratio <= 15),
        (f"data_backend().describe: {t['data_backend']:.3f} µs", "<= 0.75 µs", t["data_backend"] <= 0.75),
        (
            f"first lookup's plugin scan: {t['plugin_scan_ms']:.1f} ms (once per registry)",
            "<= 50 ms",
            t["plugin_scan_ms"] <= 50,
        ),
    ]


def main() -> int:
    with isolated_registry(keep_backends=True):
        load_config({"data": {"dataset_type": "synthetic"}})
        lines = report(measure())
    print(f"backend registry (Python {sys.version.split()[0]}, best of {ROUNDS})")
    for line, target, ok in lines:
        print(f"  {line:<70} target {target:<9} {'PASS' if ok else 'MISS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
