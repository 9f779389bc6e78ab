"""``inspector report --loader-results FILE``: reading back what ``inspector bench loader`` writes.

The file is untrusted input: whatever it holds, the reader returns checked rows or raises a
``UsageError`` naming the file (never another exception, never markup through to the report).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.cli._common import UsageError
from inspector.cli._loader_results import MAX_BYTES, csv_text, read_loader_results
from inspector.loader.bench import METHOD_LABELS, BenchRow, record_run
from inspector.loader.bench.peers import LAYOUTS

FILE_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _row(method: str = "ours", mb_s: float = 1500.0, **changes: object) -> BenchRow:
    values: dict[str, object] = dict(
        layout="columnar",
        size_mb=1.0,
        workers=2,
        device="cpu",
        method=method,
        mb_s=mb_s,
        mb_s_min=mb_s * 0.9,
        mb_s_max=mb_s * 1.1,
        repeats=3,
        loads=16,
        leaves=4,
        corrupt=0,
    )
    values.update(changes)
    return BenchRow(**values)  # type: ignore[arg-type]


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


finite = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
counts = st.integers(min_value=0, max_value=2**31 - 1)
bench_rows = st.builds(
    BenchRow,
    layout=st.sampled_from(LAYOUTS),
    size_mb=finite,
    workers=counts,
    device=st.sampled_from(["cpu", "cuda", "cuda:1", "mps"]),
    method=st.sampled_from(sorted(METHOD_LABELS)),
    mb_s=finite,
    mb_s_min=finite,
    mb_s_max=finite,
    repeats=counts,
    loads=counts,
    leaves=counts,
    corrupt=counts,
    read_ms=st.none() | finite,
    handoff_ms=st.none() | finite,
    wait_ms=st.none() | finite,
    build_ms=st.none() | finite,
    h2d_ms=st.none() | finite,
    callback_ms=st.none() | finite,
    capped=st.booleans(),
    load_average=finite,
    cores=counts,
)


@FILE_SETTINGS
@given(rows=st.lists(bench_rows, min_size=1, max_size=8))
def test_the_csv_bench_writes_reads_back_as_the_same_rows(tmp_path: Path, rows: list[BenchRow]) -> None:
    path = _write(tmp_path / "r.csv", csv_text(row.as_dict() for row in rows))
    results = read_loader_results(path)
    assert list(results.rows) == rows and results.history is None


def test_the_history_reads_back_its_last_runs_with_their_environment(tmp_path: Path) -> None:
    history = tmp_path / "bench-history.jsonl"
    for i in range(7):
        record_run("loader", [_row(mb_s=1000.0 + i)], cancelled=i == 6, path=history)
    record_run("dispatch", [], path=history)  # another part's run is not the loader's
    with history.open("a") as file:
        file.write('{"part": "loader", "rows": [{"layout": "colu')  # a run cut short by a crash mid-write
    results = read_loader_results(str(history))
    assert results.history is not None and len(results.history) == 5  # the last five, as --compare shows
    assert [run["rows"][0]["mb_s"] for run in results.history] == [1002.0, 1003.0, 1004.0, 1005.0, 1006.0]
    assert results.history[-1]["cancelled"] is True and results.history[0]["environment"]["torch"]
    assert results.rows == (_row(mb_s=1006.0),)  # the Loader section charts the last run


# (what the file holds, a fragment of the one-line error)
BAD_FILES: list[tuple[str | bytes, str]] = [
    ("", "is empty"),
    ("   \n", "is empty"),
    (b"\xff\xfe\x00bad", "is not UTF-8 text"),
    ("layout,size_mb\ncolumnar,1\n", "is not a loader benchmark CSV: no workers, device"),
    ("part,name,value,unit,baseline\ndispatch,x,1,s,y\n", "the CSV of another part's benchmark"),
    (csv_text([_row().as_dict()]).splitlines()[0] + "\n", "holds a header but no rows"),
    (csv_text([{**_row().as_dict(), "layout": "<script>"}]), "layout '<script>' is not one of steps, columnar"),
    (csv_text([{**_row().as_dict(), "mb_s": "nan"}]), "mb_s 'nan' is not a finite number"),
    (csv_text([{**_row().as_dict(), "mb_s": "-1"}]), "mb_s '-1' is negative"),
    (csv_text([{**_row().as_dict(), "workers": "2.5"}]), "workers '2.5' is not a whole number"),
    (csv_text([{**_row().as_dict(), "workers": "99999999999"}]), "is larger than"),
    (csv_text([{**_row().as_dict(), "capped": "maybe"}]), "capped 'maybe' is not True or False"),
    (csv_text([{**_row().as_dict(), "device": "tpu"}]), "device 'tpu' is not one of cpu, cuda or cuda:N"),
    (csv_text([_row().as_dict()]) + "columnar,1,2\n", "line 3: device is missing"),
    (csv_text([_row().as_dict()]) + ",".join(["x"] * 30) + "\n", "line 3 has more fields than the header"),
    ('{"plan": 1}\n', "holds no loader runs"),
    ('{"a": [1,\n2]}\n', "is one JSON document, not a loader history"),
    (
        '{"part": "loader", "rows": [{"layout": "steps"}]}\n',
        "no loader runs (1 line of the history could not be read and was skipped (line 1: rows[0]: no size_mb",
    ),
    ('{"part": "loader", "rows": [1]}\n', "line 1: rows[0]: is not an object"),
    (
        json.dumps({"part": "loader", "rows": [_row().as_dict()], "environment": {"cpu": "<img src=x>"}}) + "\n",
        "line 1: environment is not plain text",
    ),
    (json.dumps({"part": "loader", "rows": [{**_row().as_dict(), "mb_s": True}]}) + "\n", "is a boolean"),
    (
        '{"part": "loader", "rows": [{"mb_s": NaN}]}\n',
        "holds no loader runs (1 line of the history could not be read and was skipped (line 1: not JSON (NaN",
    ),
]


@pytest.mark.parametrize(("content", "fragment"), BAD_FILES, ids=[f[1][:40] for f in BAD_FILES])
def test_a_bad_file_is_one_usage_error_naming_the_file(tmp_path: Path, content: str | bytes, fragment: str) -> None:
    path = tmp_path / "results.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(UsageError) as caught:
        read_loader_results(str(path))
    message = str(caught.value)
    assert fragment in message and f"--loader-results {path}" in message and "\n" not in message


def test_what_is_not_a_readable_regular_file_is_refused_before_reading(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # reading it would block forever
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as file:
        file.truncate(MAX_BYTES + 1)  # sparse: costs no disk
    for name, fragment in [
        ("fifo", "not a regular file"),
        (".", "is a folder"),
        ("huge.csv", "far smaller"),
        ("missing.csv", "No such file"),
    ]:
        with pytest.raises(UsageError, match=fragment):
            read_loader_results(str(tmp_path / name))


@FILE_SETTINGS
@given(
    text=st.text(max_size=400)
    | st.builds(lambda row, cut: csv_text([row.as_dict()])[:cut], bench_rows, st.integers(0, 400))
)
def test_any_text_reads_as_rows_or_one_usage_error(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path / "fuzz.txt", text)
    try:
        results = read_loader_results(path)
    except UsageError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(isinstance(row, BenchRow) for row in results.rows)
        assert all("<" not in row.layout and "<" not in row.device for row in results.rows)
