"""``inspector bench loader``: bad options are refused in one line before anything runs; runs are compared."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from waiting import RUN_WAIT_S, wait_until

from inspector.loader.bench import read_history


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inspector", "bench", *args], capture_output=True, text=True, timeout=RUN_WAIT_S, env=env
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--sizes", "1e9"], "out of range"),
        (["--sizes", "nan"], "out of range"),
        (["--sizes", "-1"], "out of range"),
        (["--sizes", "x"], "comma-separated floats"),
        (["--sizes", ","], "is empty"),
        (["--workers", "0"], "--workers must be positive"),
        (["--out", "/nonexistent-folder/rows.csv"], "does not exist"),
        (["--out", "/"], "is a folder"),
        (["--out", "/proc/new.csv"], "cannot create files in /proc"),
    ],
)
def test_bad_options_exit_2_with_one_line_before_running(args: list[str], fragment: str) -> None:
    result = bench("loader", *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("inspector bench: ") and fragment in lines[0]
    assert result.stdout == ""  # nothing ran


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_a_cuda_device_without_a_gpu_says_so_in_one_line() -> None:
    result = bench("loader", "--device", "cuda")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no CUDA GPU here" in lines[0] and "drop --device" in lines[0]


@pytest.mark.slow
def test_a_small_run_prints_its_targets_and_is_kept_for_compare(tmp_path: Path) -> None:
    env = {**os.environ, "INSPECTOR_CACHE_DIR": str(tmp_path / "cache")}
    first = bench(
        "loader", "--sizes", "1", "--layouts", "steps", "--repeats", "1", "--out", str(tmp_path / "r.csv"), env=env
    )
    assert first.returncode in (0, 1), first.stderr[-2000:]
    out = first.stdout
    assert "steps 1 MiB vs sync" in out and "small load (1024 B) round trip" in out and "pipe round trip" in out
    assert ("PASS" in out or "MISS" in out) and (tmp_path / "r.csv").read_text().startswith("layout,")
    compare = bench("loader", "--compare", env=env)
    assert compare.returncode == 0 and compare.stdout.startswith("#1 ") and "ours" in compare.stdout


def test_compare_without_a_history_says_how_to_make_one(tmp_path: Path) -> None:
    result = bench("loader", "--compare", "3", env={**os.environ, "INSPECTOR_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0 and "run `inspector bench loader` first" in result.stdout
    other = bench("dispatch", "--compare")
    assert other.returncode == 2 and "only the loader benchmark keeps a history" in other.stderr


def interrupt_when(command: list[str], env: dict[str, str], ready: str) -> tuple[int, str]:
    """Run ``command``, press Ctrl-C (a real SIGINT) once its stderr shows ``ready``; (exit code, stderr)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: process.stderr.read(1), "")), daemon=True)
    reader.start()
    try:
        wait_until(lambda: ready in "".join(seen) or process.poll() is not None, RUN_WAIT_S)
        process.send_signal(signal.SIGINT)
        code = process.wait(RUN_WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(RUN_WAIT_S)
    return code, "".join(seen)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["cli", "script"])
def test_ctrl_c_keeps_the_rows_measured_so_far_as_a_cancelled_run(tmp_path: Path, how: str) -> None:
    env = {**os.environ, "INSPECTOR_CACHE_DIR": str(tmp_path / "cache")}
    if how == "cli":
        command = [
            sys.executable,
            "-m",
            "inspector",
            "bench",
            "loader",
            "--sizes",
            "1,2,3",
            "--layouts",
            "steps",
            "--repeats",
            "1",
        ]
        ready = "] 2/15 "
    else:
        command = [sys.executable, str(Path(__file__).parents[3] / "benchmarks" / "loader.py"), "--quick"]
        ready = "[ 2/"
    code, stderr = interrupt_when(command, env, ready)
    assert code == 130, stderr[-2000:]
    (entry,) = read_history("loader", path=tmp_path / "cache" / "bench-history.jsonl")
    assert entry["cancelled"] is True and len(entry["rows"]) >= 2
    assert {row["layout"] for row in entry["rows"]} == {"steps"}


@pytest.mark.slow
def test_a_history_that_cannot_be_written_loses_no_result_and_never_hangs(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    os.mkfifo(cache / "bench-history.jsonl")  # opening it to append would wait for a reader forever
    out, plot = tmp_path / "results.csv", tmp_path / "results.png"
    result = bench(
        "loader",
        "--sizes",
        "0.25",
        "--layouts",
        "steps",
        "--repeats",
        "1",
        "--out",
        str(out),
        "--plot",
        str(plot),
        env={**os.environ, "INSPECTOR_CACHE_DIR": str(cache)},
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    assert out.read_text().startswith("layout,") and plot.read_bytes().startswith(b"\x89PNG")
    assert "small load (1024 B) round trip" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "this run was not kept in the history" in warnings[0]
    assert "not a regular file" in warnings[0] and "Traceback" not in result.stderr
