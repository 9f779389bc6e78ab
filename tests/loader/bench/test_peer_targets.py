"""``benchmarks/loader_peers.py``: the ratios and verdicts it prints from one peer run, and how to build its venv."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

SCRIPT = Path(__file__).parents[3] / "benchmarks" / "loader_peers.py"


def peers_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("loader_peers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def results(cells: dict[tuple[str, str], dict[int, float]], bad: int = 0) -> dict[str, Any]:
    layouts: dict[str, Any] = {}
    for (layout, method), by_size in cells.items():
        rows = [
            {"size_mib": size, "mbps": mbps, "verify_fail": bad if method.startswith("inspector") else 0}
            for size, mbps in by_size.items()
        ]
        layouts.setdefault(layout, {})[method] = {"ok": True, "results": rows, "loadavg1_before_after": [0.5, 0.6]}
    layouts["steps"]["broken"] = {"ok": False, "error": "import failed"}
    return {"layouts": layouts, "total_wall_s": 1.0}


RUN = {
    ("steps", "memcpy_warm"): {1: 20_000.0, 256: 10_000.0},
    ("steps", "pickle_load"): {1: 1000.0, 256: 900.0},
    ("steps", "ding_w3"): {1: 1500.0, 256: 800.0},
    ("steps", "inspector_w2"): {1: 1200.0, 256: 6000.0},
    ("steps", "inspector_w3"): {1: 3000.0, 256: 6500.0},
    ("columnar", "ding_w3"): {256: 2000.0},
    ("columnar", "inspector_w2"): {256: 4000.0},
}


def test_each_target_is_the_ratio_of_the_two_cells_of_the_same_run() -> None:
    verdicts = {what: (shown, passed) for what, shown, passed in peers_module().targets(results(RUN))}
    assert verdicts["inspector_w2 / ding_w3, steps 1 MiB"] == ("0.80x (needs >= 1x)", False)
    assert verdicts["inspector_w3 / ding_w3, steps 1 MiB"] == ("2.00x (needs >= 1x)", True)
    assert verdicts["inspector_w2 / ding_w3, columnar 256 MiB"] == ("2.00x (needs >= 1x)", True)
    assert verdicts["inspector_w2 / pickle_load, steps 1 MiB"] == ("1.20x (needs >= 1x)", True)
    assert verdicts["inspector_w2 / memcpy_warm, steps 256 MiB"] == ("0.60x (needs >= 0.5x)", True)
    assert verdicts["corrupt or lost deliveries of ours"] == ("0 (needs 0)", True)
    assert "inspector_w3 / ding_w3, columnar 256 MiB" not in verdicts  # a cell that did not run is not judged


def test_a_corrupt_delivery_of_ours_is_a_miss_and_the_table_shows_it() -> None:
    module = peers_module()
    run = results(RUN, bad=2)
    assert ("corrupt or lost deliveries of ours", "10 (needs 0)", False) in module.targets(run)
    lines = module.report(run)
    assert any(line.startswith("steps        1") and " 4/0 " in line for line in lines)
    assert "  MISS corrupt or lost deliveries of ours: 10 (needs 0)" in lines


def test_a_missing_side_is_not_measured_rather_than_a_pass() -> None:
    run = results({k: v for k, v in RUN.items() if k != ("steps", "pickle_load")})
    verdicts = {what: (shown, passed) for what, shown, passed in peers_module().targets(run)}
    assert verdicts["inspector_w2 / pickle_load, steps 1 MiB"] == ("not measured", None)


def test_without_a_peers_venv_it_says_how_to_build_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "loader_peers.py"
    script.write_text("")
    env = {"INSPECTOR_PEERS_SCRIPT": str(script), "INSPECTOR_PEERS_VENV": str(tmp_path / "no-venv")}
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )
    assert result.returncode == 0, result.stderr
    assert "peer comparison skipped: no peers virtualenv" in result.stdout
    assert f"bash {tmp_path / 'peers-venv.sh'} {tmp_path / 'no-venv'}" in result.stdout
    monkeypatch.setenv("INSPECTOR_PEERS_SCRIPT", str(tmp_path / "nowhere.py"))
    assert "next step = set INSPECTOR_PEERS_SCRIPT" in peers_module().missing()
