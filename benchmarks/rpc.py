"""RPC costs against torch, measured in the same run.

    python benchmarks/rpc.py        (also: inspector bench rpc)

Validating a 64-worker x 8-GPU full mesh, ours vs torch's validator (target <= 1.0x), and
LocalWorld(2) start-to-ready vs bare init_rpc processes (target <= 1.2x); see
inspector/rpc/bench.py for how each is measured.
"""

from __future__ import annotations

import sys

import torch

from inspector.rpc.bench import measure


def main() -> int:
    print(f"RPC (torch {torch.__version__}, Python {sys.version.split()[0]})")
    for measurement in measure():
        print("  " + measurement.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
