"""The benchmark history as hostile input: FIFOs, devices, bad bytes and wrong types never hide a valid run.

One reader serves ``inspector bench loader --compare``, ``inspector report --loader-results``, the
Loader tab and Python; every test uses real files, FIFOs and symlinks.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from waiting import PROCESS_WAIT_S

from inspector.cli._loader_results import read_loader_results
from inspector.loader import LoaderError
from inspector.loader.bench import (
    BenchRow,
    HistoryFileError,
    keep_run,
    label_run,
    read_history,
    record_run,
    run,
)

ROW = BenchRow("steps", 1, 2, "cpu", "ours", 100.0, 90.0, 110.0, 3, 8, 4, 0)


def compare(cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INSPECTOR_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "inspector", "bench", "loader", "--compare", *extra],
        capture_output=True,
        text=True,
        timeout=PROCESS_WAIT_S,
        env=env,
    )


def hostile_lines() -> list[bytes]:
    """One line of each kind that used to hide every run behind a traceback, and why it is skipped."""
    return [
        b'{"part": "loader", "time": "x", "rows": []}\xff\n',  # one invalid UTF-8 byte
        b"[" * 100_000 + b"\n",  # nested far deeper than the parser goes
        json.dumps({"part": "loader", "time": "x", "rows": [], "environment": []}).encode() + b"\n",  # wrong type
        json.dumps({"part": "loader", "rows": [{**ROW.as_dict(), "mb_s": "fast"}]}).encode() + b"\n",
        json.dumps({"part": "loader", "rows": [], "cancelled": "yes"}).encode() + b"\n",
        b'{"part": "loader", "rows": [{"mb_s": NaN}]}\n',
        b"\x00" * 100 + b"\n",
        b'{"part": "loader", "rows": [{"layout": "colu',  # a run cut short by a crash mid-write
    ]


def test_every_valid_run_survives_any_bad_line_and_the_skips_are_counted(tmp_path: Path) -> None:
    history = tmp_path / "bench-history.jsonl"
    record_run("loader", [ROW], settings={"n": 1}, path=history)
    with history.open("ab") as file:
        file.write(b"".join(hostile_lines()[:-1]))
    record_run("loader", [ROW], settings={"n": 2}, path=history)
    with history.open("ab") as file:
        file.write(hostile_lines()[-1])
    runs = read_history("loader", path=history)
    assert [r["settings"]["n"] for r in runs] == [1, 2]
    assert len(runs.skipped) == len(hostile_lines())
    assert [s.line for s in runs.skipped] == [*range(2, 2 + len(hostile_lines()) - 1), 10]
    reasons = " | ".join(s.reason for s in runs.skipped)
    for fragment in (
        "not UTF-8 text",
        "nested too deeply",
        "environment is not an object",
        "mb_s 'fast' is not a number",
        "cancelled is not true or false",
        "NaN is not a number JSON allows",
    ):
        assert fragment in reasons
    assert runs.note().startswith("8 lines of the history could not be read and were skipped (line 2: not UTF-8")
    # the report reads the same file with the same reader: the same runs, and it says what it skipped
    results = read_loader_results(str(history))
    assert results.history is not None and len(results.history) == 2 and results.note == runs.note()

    result = compare(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("#1 ") and "#2 " in result.stdout and "8 lines of the history" in result.stdout
    assert "Traceback" not in result.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=60).filter(lambda b: b"\n" not in b and b.strip()), max_size=6))
def test_any_bytes_between_runs_are_skipped_and_counted(tmp_path: Path, junk: list[bytes]) -> None:
    history = tmp_path / "fuzz.jsonl"
    history.unlink(missing_ok=True)
    record_run("loader", [ROW], path=history)
    with history.open("ab") as file:
        file.write(b"".join(line + b"\n" for line in junk))
    record_run("loader", [ROW], path=history)
    runs = read_history("loader", last=0, path=history)
    assert len(runs) >= 2 and all(run["rows"] == [ROW.as_dict()] for run in runs[:1] + runs[-1:])
    assert len(runs) - 2 + len(runs.skipped) <= len(junk)  # each junk line is a run of its own, skipped, or
    # another part's run: never more, and never at the cost of a valid run


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
def test_compare_refuses_a_history_that_is_not_a_regular_file_at_once(tmp_path: Path, kind: str) -> None:
    history = tmp_path / "bench-history.jsonl"
    if kind == "fifo":
        os.mkfifo(history)  # reading it would block forever
    elif kind == "dev-zero":
        history.symlink_to("/dev/zero")  # reading it would fill memory
    else:
        history.mkdir()
    result = compare(tmp_path)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("inspector bench: the benchmark history ") and "next step" in line
    assert ("a folder" if kind == "folder" else "not a regular file") in line
    with pytest.raises(HistoryFileError) as caught:
        read_history(path=history)
    assert isinstance(caught.value, LoaderError) and caught.value.path == str(history)


@pytest.mark.parametrize("kind", ["fifo", "fifo-with-reader", "dev-null", "folder"])
def test_a_non_regular_history_path_is_refused_not_opened_for_writing(tmp_path: Path, kind: str) -> None:
    history = tmp_path / "bench-history.jsonl"
    reader = None
    if kind.startswith("fifo"):
        os.mkfifo(history)
        if kind == "fifo-with-reader":  # someone reads the FIFO: still nothing is written into it
            fd = os.open(history, os.O_RDONLY | os.O_NONBLOCK)
            reader = fd
    elif kind == "dev-null":
        history.symlink_to("/dev/null")
    else:
        history.mkdir()
    outcome: list[BaseException | None] = []
    writer = threading.Thread(target=lambda: outcome.append(_raised(lambda: record_run("loader", [ROW], path=history))))
    writer.start()
    writer.join(PROCESS_WAIT_S)
    assert not writer.is_alive(), "record_run blocked on the history path"
    assert isinstance(outcome[0], HistoryFileError)
    if reader is not None:
        assert os.read(reader, 100) == b""  # nothing reached the FIFO
        os.close(reader)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    problem = keep_run("loader", [ROW], path=history)
    assert problem is not None and problem.startswith("this run was not kept in the history: ")


def _raised(fn) -> BaseException | None:  # type: ignore[no-untyped-def]
    try:
        fn()
    except BaseException as exc:
        return exc
    return None


def test_a_history_folder_that_cannot_be_made_is_one_warning_and_the_rows_are_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", "/proc/inspector-cannot-exist")
    with pytest.warns(RuntimeWarning, match="this run was not kept in the history"):
        rows = run(sizes_mb=(0.25,), workers=(1,), methods=("memcpy",), repeats=1)
    assert [row.method for row in rows] == ["memcpy"]


def test_runs_keep_an_id_and_a_label_given_then_or_later(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    first = record_run("loader", [ROW], label="before the change", path=history)
    second = record_run("loader", [ROW], path=history)
    assert first["id"] != second["id"]
    label_run(second["id"], "after the change", path=history)
    runs = read_history(path=history)
    assert [r["label"] for r in runs] == ["before the change", "after the change"] and not runs.skipped
    with pytest.raises(KeyError, match="Known: "):
        label_run("no-such-run", "x", path=history)
    with pytest.raises(ValueError, match="plain text"):
        label_run(first["id"], "<b>x</b>", path=history)


def test_a_history_larger_than_the_read_limit_is_read_from_its_newest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspector.loader.bench import history_file

    history = tmp_path / "h.jsonl"
    for i in range(20):
        record_run("loader", [ROW], settings={"i": i}, path=history)
    monkeypatch.setattr(history_file, "READ_LIMIT", history.stat().st_size // 4)
    runs = read_history(last=0, path=history)
    assert runs.tail_only and runs[-1]["settings"]["i"] == 19 and 0 < len(runs) < 20 and not runs.skipped
    assert "only its newest part was read" in runs.note()


def test_the_suite_and_its_subprocesses_never_write_the_users_history() -> None:
    from inspector.loader.bench import history_path

    user = Path(os.path.expanduser("~")) / ".cache" / "inspector"
    ours = history_path()
    temporary = Path(tempfile.gettempdir()).resolve()
    child = subprocess.run(
        [sys.executable, "-c", "from inspector.loader.bench import history_path; print(history_path())"],
        capture_output=True,
        text=True,
        timeout=PROCESS_WAIT_S,
        check=True,
    )
    for path in (ours, Path(child.stdout.strip())):
        assert user not in path.resolve().parents and temporary in path.resolve().parents


def test_the_report_says_which_lines_of_a_history_it_skipped(tmp_path: Path) -> None:
    from inspector import cli

    history = tmp_path / "bench-history.jsonl"
    memcpy = BenchRow("steps", 1, 2, "cpu", "memcpy", 9000.0, 8000.0, 9500.0, 3, 1, 4, 0)
    record_run("loader", [ROW, memcpy], path=history)
    with history.open("ab") as file:
        file.write(hostile_lines()[0])
    assert cli.main(["report", str(tmp_path / "r.html"), "--loader-results", str(history)]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "1 line of the history could not be read and was skipped (line 2: not UTF-8 text" in html


def test_compare_shows_every_run_with_its_label_baselines_and_targets_and_overlays_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspector import cli
    from inspector._bench import Measurement

    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(tmp_path))
    rows = [
        ROW,
        BenchRow("steps", 1, 2, "cpu", "dataloader", 10.0, 9.0, 11.0, 3, 8, 4, 0),
        BenchRow("steps", 1, 1, "cpu", "memcpy", 9000.0, 8000.0, 9500.0, 3, 1, 4, 0),
    ]
    target = Measurement(
        "loader",
        "steps 1 MiB vs DataLoader",
        100.0,
        "MiB/s",
        "torch DataLoader",
        10.0,
        10.0,
        "DataLoader",
        ">= 10x",
        True,
    )
    record_run("loader", rows, [target], label="before")
    record_run("loader", rows, [target], label="after")
    plot = tmp_path / "compare.png"
    assert cli.main(["bench", "loader", "--compare", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#1 ") and " before (id " in out and " after (id " in out
    assert "torch DataLoader" in out and "memcpy (ceiling)" in out  # the baselines' rows
    assert "steps 1 MiB vs DataLoader: #1 100 / 10 MiB/s PASS; #2 100 / 10 MiB/s PASS" in out
    assert plot.read_bytes().startswith(b"\x89PNG") and "overlaid" in out


def test_a_label_that_is_not_plain_text_is_refused_before_anything_runs(tmp_path: Path) -> None:
    env = {**os.environ, "INSPECTOR_CACHE_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "inspector", "bench", "loader", "--label", "<b>x</b>"],
        capture_output=True,
        text=True,
        timeout=PROCESS_WAIT_S,
        env=env,
    )
    assert result.returncode == 2 and "--label" in result.stderr and "plain text" in result.stderr
    assert result.stdout == "" and not (tmp_path / "bench-history.jsonl").exists()


def test_a_finished_run_is_kept_with_its_targets_their_baselines_and_its_label(tmp_path: Path) -> None:
    run(
        sizes_mb=(0.25,),
        workers=(1,),
        methods=("ours", "sync", "memcpy"),
        repeats=1,
        label="my change",
        directory=str(tmp_path),
    )
    (kept,) = read_history("loader", last=1)
    assert kept["label"] == "my change" and {r["method"] for r in kept["rows"]} == {"ours", "sync", "memcpy"}
    names = {m["name"]: m for m in kept["measurements"]}
    share = names["steps 0.25 MiB throughput"]
    assert share["baseline_value"] is not None and share["baseline"].startswith("memcpy")
