"""Backend-registry costs against plain baselines measured in the same run.

    python benchmarks/backends.py        (also: inspector bench backends)

What the registry adds on the paths training code takes (look up a backend, fetch a verb) and what
the one-time plugin scan costs, against budgets the project holds itself to; see
inspector/backends/bench.py.
"""

from __future__ import annotations

import sys

from inspector.backends.bench import measure


def main() -> int:
    print(f"backend registry (Python {sys.version.split()[0]}, best of 7)")
    for measurement in measure():
        print("  " + measurement.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
