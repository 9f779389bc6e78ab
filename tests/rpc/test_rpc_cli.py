"""``inspector rpc check`` as a real subprocess: warnings, ``--strict``, and hostile files (exit 2, one line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.rpc import TopologyPlan

CLI_WAIT_S = 120.0


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inspector", "rpc", "check", *args], capture_output=True, text=True, timeout=CLI_WAIT_S
    )


def write(tmp_path: Path, plan: TopologyPlan, name: str = "plan.json") -> str:
    path = tmp_path / name
    path.write_text(plan.to_json())
    return str(path)


def test_a_plan_torch_accepts_with_warnings_prints_them_and_strict_refuses_it(tmp_path: Path) -> None:
    self_keyed = TopologyPlan.build(
        2, 2, {"worker0": {"worker0": {"cuda:0": "cuda:1"}, "worker1": {"cpu": "cpu", "cuda:1": "cuda:0"}}}
    )
    path = write(tmp_path, self_keyed)
    relaxed = check(path)
    assert relaxed.returncode == 0, relaxed.stderr
    lines = relaxed.stdout.splitlines()
    assert lines[0].startswith("WARNING SELF_MAP (worker0 -> worker0): worker0 has a device map keyed by its own name")
    assert any(line.startswith("WARNING CPU_PAIR (worker0 -> worker1): ") for line in lines)
    assert any(line.startswith("WARNING ASYMMETRIC_MAP (worker0 -> worker1): ") for line in lines)
    assert lines[-1] == "OK: init_rpc would accept this plan (2 workers, 0 problem(s), 3 warning(s))"
    strict = check(path, "--strict")
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[-1] == (
        "STRICT: init_rpc would accept this plan, but --strict refuses its warnings "
        "(2 workers, 0 problem(s), 3 warning(s))"
    )


def test_a_clean_plan_passes_strict_too(tmp_path: Path) -> None:
    result = check(write(tmp_path, TopologyPlan.ring(4, 2)), "--strict")
    assert result.returncode == 0 and result.stdout.startswith("OK: init_rpc would accept this plan (4 workers")


def fifo(tmp_path: Path) -> str:
    path = tmp_path / "plan.fifo"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: _text(p, '{"workers": [{"name": "a", "device_count": 1e400}]}'), "1e400 is not a finite number"),
        (lambda p: _text(p, '{"workers": [{"name": "a", "device_count": NaN}]}'), "NaN is not a JSON number"),
        (lambda p: _text(p, "[" * 100_000 + "]" * 100_000), "JSON nested too deeply to parse"),
        (lambda p: _text(p, '{"workers": [{"name": "a", "device_count": ' + "9" * 5000 + "}]}"), "digits"),
        (lambda p: _text(p, '{"workers": [{"name": "a", "device_count": 2147483647}]}'), "is not a device count"),
        (lambda p: _text(p, '{"workers": [], "static_group": "no"}'), "Invalid plan at static_group"),
        (lambda p: _text(p, "{not json"), "Invalid plan at line 1 column 2"),
        (lambda p: _text(p, "\xff\xfe", encoding="latin-1"), "not UTF-8 text"),
        (fifo, "a FIFO, not a plan file"),
        (lambda p: str(p), "a directory, not a plan file"),
        (lambda p: str(p / "missing.json"), "No such file or directory"),
    ],
)
def test_a_file_that_is_not_a_plan_exits_two_with_one_line_and_no_traceback(
    tmp_path: Path, make: object, fragment: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    result = check(path)  # a FIFO without a writer would block a plain read forever
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"inspector rpc: cannot read {path}: ")
    assert fragment in lines[0] and "Traceback" not in result.stderr


def _text(directory: Path, text: str, encoding: str = "utf-8") -> str:
    path = directory / "plan.json"
    path.write_bytes(text.encode(encoding))
    return str(path)
