"""The loader against its peers, in one run: the peer storage loader ``ding_w3``, ``pickle.load``, memcpy.

    python benchmarks/loader_peers.py [--quick] [--json results.json]

It runs the peer benchmark ``loader_peers.py`` (``$INSPECTOR_PEERS_SCRIPT``, else
``../shared/bench/loader_peers.py`` beside the project) in the peers' own virtualenv
(``$INSPECTOR_PEERS_VENV``, else ``.venv-peers`` in the project), which holds the peer loader: it
is never installed into the project's ``.venv``. This checkout goes first on that interpreter's path,
so the figures are those of the code here, not of a copy installed there. Every method runs in a
process of its own, on the same payload files (page cache warm), and every delivery is checked.

Printed: each cell's MiB/s, ours (2 and 3 workers) over ``ding_w3`` at every size and layout, ours
over ``pickle_load`` at 1 MiB, the 256 MiB steps payload over a warm memcpy, the corrupt deliveries,
and each target with PASS or MISS, with the load average before and after (the machine may be
shared: run it twice and compare). Without the peers' virtualenv it says how to build one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("memcpy_warm", "readinto", "pickle_load", "ding_w3", "inspector_w2", "inspector_w3")
OURS = ("inspector_w2", "inspector_w3")


def peers_script() -> Path:
    """``$INSPECTOR_PEERS_SCRIPT``, else ``shared/bench/loader_peers.py`` in the nearest folder above that has one."""
    if os.environ.get("INSPECTOR_PEERS_SCRIPT"):
        return Path(os.environ["INSPECTOR_PEERS_SCRIPT"])
    candidates = [parent / "shared" / "bench" / "loader_peers.py" for parent in ROOT.parents]
    return next((c for c in candidates if c.exists()), candidates[0])


def peers_python() -> Path:
    venv = Path(os.environ.get("INSPECTOR_PEERS_VENV") or ROOT / ".venv-peers")
    return venv / "bin" / "python"


def missing() -> str | None:
    """Why the peer comparison cannot run here, with what to do; None when it can."""
    script, python = peers_script(), peers_python()
    if not script.exists():
        return (
            f"peer comparison skipped: no peer script at {script}\n"
            "next step = set INSPECTOR_PEERS_SCRIPT to loader_peers.py"
        )
    if not python.exists():
        build = script.parent / "peers-venv.sh"
        venv = python.parent.parent
        return (
            f"peer comparison skipped: no peers virtualenv at {venv}\n"
            f"next step = build it (the peers, kept out of .venv), from {ROOT}: bash {build} {venv}"
        )
    return None


def run(quick: bool = False) -> dict[str, Any]:
    """One run of the peer script with ``METHODS``; its results (``layouts`` -> method -> sizes)."""
    with tempfile.TemporaryDirectory(prefix="inspector-peers-") as tmp:
        out = os.path.join(tmp, "peers.json")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(":"))
        command = [str(peers_python()), str(peers_script()), "--methods", ",".join(METHODS), "--json", out]
        if quick:
            command.append("--quick")
        subprocess.run(command, check=True, env=env, stdout=sys.stderr)
        with open(out) as file:
            results: dict[str, Any] = json.load(file)
    return results


def cells(results: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """(layout, method, MiB) -> the cell, for each method that ran."""
    found = {}
    for layout, methods in results.get("layouts", {}).items():
        for method, result in methods.items():
            for cell in result.get("results") or () if result.get("ok") else ():
                if "size_mib" in cell and "mbps" in cell:
                    load = result.get("loadavg1_before_after")
                    found[(layout, method, int(cell["size_mib"]))] = {**cell, "load": load}
    return found


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(what, the figure, whether it meets its target or None when a side did not run)."""
    by = cells(results)
    checks: list[tuple[str, str, bool | None]] = []

    def check(what: str, a: tuple[str, str, int], b: tuple[str, str, int], least: float) -> None:
        if a not in by or b not in by or by[b]["mbps"] <= 0:
            checks.append((what, "not measured", None))
            return
        value = by[a]["mbps"] / by[b]["mbps"]
        checks.append((what, f"{value:.2f}x (needs >= {least:g}x)", value >= least))

    for ours in OURS:
        for layout in ("steps", "columnar"):
            for size in sorted({s for (lay, m, s) in by if lay == layout and m == "ding_w3"}):
                if (layout, ours, size) in by:
                    check(f"{ours} / ding_w3, {layout} {size} MiB", (layout, ours, size), (layout, "ding_w3", size), 1)
    check("inspector_w2 / pickle_load, steps 1 MiB", ("steps", "inspector_w2", 1), ("steps", "pickle_load", 1), 1)
    top = max((s for (lay, m, s) in by if lay == "steps" and m == "memcpy_warm"), default=0)
    check(
        f"inspector_w2 / memcpy_warm, steps {top} MiB",
        ("steps", "inspector_w2", top),
        ("steps", "memcpy_warm", top),
        0.5,
    )
    ours = [c for (_, method, _), c in by.items() if method in OURS]
    bad = sum(int(c.get("verify_fail", 0)) + int(c.get("lost_callbacks", 0)) for c in ours)
    checks.append(("corrupt or lost deliveries of ours", f"{bad} (needs 0)", bad == 0))
    return checks


def report(results: dict[str, Any]) -> list[str]:
    by = cells(results)
    lines = [
        "MiB/s, median of the timed repeats (ours: inspector_w2 / _w3); bad = corrupt deliveries",
        f"{'layout':<9} {'MiB':>4} {'w2':>7} {'w3':>7} {'ding_w3':>8} {'pickle':>7} {'memcpy':>7} "
        f"{'w2/ding':>8} {'w3/ding':>8} {'bad ours/ding':>14}  load avg (ours w2)",
    ]
    for layout in ("steps", "columnar"):
        for size in sorted({s for (lay, _m, s) in by if lay == layout}):
            row = {m: by.get((layout, m, size)) for m in METHODS}
            if row["inspector_w2"] is None:
                continue

            def mb(m: str, row: dict[str, Any] = row) -> str:
                return f"{row[m]['mbps']:.0f}" if row[m] else "-"

            def over(m: str, row: dict[str, Any] = row) -> str:
                return f"{row[m]['mbps'] / row['ding_w3']['mbps']:.2f}x" if row[m] and row["ding_w3"] else "-"

            bad_ours = sum(int(row[m].get("verify_fail", 0)) for m in OURS if row[m])
            bad_ding = "-" if not row["ding_w3"] else str(row["ding_w3"].get("verify_fail", 0))
            load = row["inspector_w2"]["load"]
            lines.append(
                f"{layout:<9} {size:>4} {mb('inspector_w2'):>7} {mb('inspector_w3'):>7} {mb('ding_w3'):>8} "
                f"{mb('pickle_load'):>7} {mb('memcpy_warm'):>7} {over('inspector_w2'):>8} "
                f"{over('inspector_w3'):>8} {f'{bad_ours}/{bad_ding}':>14}  {load}"
            )
    lines += ["", "peer targets:"]
    for what, shown, passed in targets(results):
        verdict = "n/a " if passed is None else ("PASS" if passed else "MISS")
        lines.append(f"  {verdict} {what}: {shown}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the peer script's quick plan (fewer loads)")
    parser.add_argument("--json", help="also write the peer script's results to this file")
    args = parser.parse_args(argv)
    why = missing()
    if why is not None:
        print(why)
        return 0
    before = os.getloadavg()
    results = run(args.quick)
    after = os.getloadavg()
    print(f"ours vs peers, one run of {peers_script().name} ({results.get('total_wall_s', '?')} s)")
    print("\n".join(report(results)))
    print(
        f"\nload average (1, 5, 15 min) before {tuple(round(x, 2) for x in before)}, "
        f"after {tuple(round(x, 2) for x in after)} on {os.cpu_count()} cores"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
