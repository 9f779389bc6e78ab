"""`make bench`: every engine part's benchmark, one after another, each in a fresh process.

The parts come from ``inspector.parts``: a part with a script of its own here (``<part>.py``,
which may print more than its ``measure()``) runs that script; any other part runs
``python -m inspector bench <part>``, which prints its ``measure()``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from inspector.parts import PARTS

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for part in PARTS:
        script = HERE / f"{part.name}.py"
        if script.exists():
            command, fine = [sys.executable, str(script)], (0,)
        else:  # `inspector bench` exits 1 when a target is missed (its lines say MISS): not a crash
            command, fine = [sys.executable, "-m", "inspector", "bench", part.name], (0, 1)
        print(f"\n=== {part.name} ===", flush=True)
        if subprocess.run(command, check=False).returncode not in fine:
            failed.append(part.name)
    if failed:
        print(f"\nbenchmarks that crashed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
