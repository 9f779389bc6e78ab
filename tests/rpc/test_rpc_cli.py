"""``inspector rpc check`` as a real subprocess: warnings, ``--strict``, and hostile files (exit 2, one line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.rpc import TopologyPlan

CLI_WAIT_S = 120.0  # a bound on a hang: each check here answers within a few seconds
MAX_LINE = 400  # what "one readable line" means for an answer


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
        (
            lambda p: _text(p, '{"workers": [{"name": "a", "device_count": ' + "9" * 5000 + "}]}"),
            "an integer of 5,000 digits (999999999999...) is not a plan value",
        ),
        (
            lambda p: _text(p, '{"workers": [{"name": "a", "device_count": 2147483647}]}'),
            "Device count 2147483647 for worker 'a' is outside 0 .. 128",
        ),
        (
            lambda p: _text(
                p, '{"workers": [{"name": "a", "device_maps": {"b": {"cpu": ' + "[" * 900 + "]" * 900 + "}}}]}"
            ),
            "Invalid device [[[[",
        ),
        (
            lambda p: _text(p, '{"workers": [{"name": "bad name"}]}'),
            "Invalid plan at workers[0].name: Worker name must match ^[A-Za-z0-9-_:]*$, and must be non-empty and "
            "shorter than 128 chars, but got 'bad name'",
        ),
        (lambda p: _text(p, '{"workers": [{"name": "' + "w" * 300 + '"}]}'), "shorter than 128 chars, but got 'www"),
        (lambda p: _text(p, '{"workers": [], "static_group": "no"}'), "Invalid plan at static_group"),
        (lambda p: _text(p, "{not json"), "Invalid plan at line 1 column 2"),
        (
            lambda p: _text(
                p,
                '{"workers": [{"name": "a", "device_maps": {"b": {"cuda:9": "cuda:0"}}}], "workers": [{"name": "a"}]}',
            ),
            "Invalid plan at key 'workers': given twice in one object",
        ),
        (lambda p: _text(p, '{"workers": [{"name": "a", "name": "b"}]}'), "key 'name': given twice in one object"),
        (
            lambda p: _text(p, '{"workers": [{"name": "a", "device_maps": {"b": {"cpu": "cpu", "cpu": "cuda:0"}}}]}'),
            "key 'cpu': given twice in one object",
        ),
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
    assert len(lines[0]) <= MAX_LINE + len(path) and "set_int_max_str_digits" not in lines[0]


LARGE = 200_000


def _workers(tmp_path: Path, workers: list[dict[str, object]], static: bool = True) -> str:
    path = tmp_path / "large.json"
    path.write_text(json.dumps({"static_group": static, "workers": workers}))
    return str(path)


def test_a_plan_of_200000_workers_is_checked_and_answered_in_one_line(tmp_path: Path) -> None:
    result = check(_workers(tmp_path, [{"name": f"w{i}", "device_count": 8} for i in range(LARGE)]))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == f"OK: init_rpc would accept this plan ({LARGE} workers, 0 problem(s), 0 warning(s))\n"


def test_200000_workers_under_1000_repeated_names_are_refused_in_one_bounded_line(tmp_path: Path) -> None:
    path = _workers(tmp_path, [{"name": f"w{i % 1000:03d}"} for i in range(LARGE)])
    result = check(path)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"inspector rpc: cannot read {path}: Invalid plan at workers: names "
        "['w000', 'w001', 'w002', 'w003', 'w004'] and 995 more appear more than once "
        "(expected unique worker names)"
    )


def test_a_dynamic_group_of_200000_workers_names_the_joiner_that_fails(tmp_path: Path) -> None:
    workers: list[dict[str, object]] = [{"name": f"w{i}"} for i in range(LARGE)]
    workers[-7]["devices"] = ["cuda:3"]
    result = check(_workers(tmp_path, workers, static=False))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert f"REFUSED: init_rpc would raise ({LARGE} workers, 1 problem(s), 0 warning(s))" in lines
    assert "ValueError: Node w199993 has devices with invalid indices" in lines


def test_90000_repeated_devices_are_refused_in_lines_of_bounded_length(tmp_path: Path) -> None:
    result = check(_workers(tmp_path, [{"name": "a", "device_count": 1, "devices": ["cuda:0"] * 90_000}]))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "DUPLICATED_DEVICES: Node a has duplicated devices"
    assert lines[1].startswith("devices = [device(type='cuda', index=0), ") and lines[1].endswith(" (89,992 more)]")
    assert "duplicated = ['cuda:0']" in lines and max(map(len, lines)) <= MAX_LINE


def _text(directory: Path, text: str, encoding: str = "utf-8") -> str:
    path = directory / "plan.json"
    path.write_bytes(text.encode(encoding))
    return str(path)
