"""Bad invocations of ``inspector``: exit 2, exactly one line on stderr naming the problem, no traceback.

Each row is run as a real subprocess. ``{tmp}`` in a row is a scratch folder holding ``file``
(a regular file), ``fifo`` (a named pipe) and ``empty/`` (a folder without the tour).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path
from types import SimpleNamespace

import pytest

from inspector import cli
from inspector.backends import ConfigError

# (arguments, a fragment the one stderr line must contain)
BAD_INVOCATIONS: list[tuple[list[str], str]] = [
    # top level
    ([], "inspector: the following arguments are required: verb; see inspector --help"),
    (["nope"], "invalid choice: 'nope'"),
    (["Explain"], "invalid choice: 'Explain'"),
    (["--nope"], "inspector: the following arguments are required: verb"),
    (["-x", "explain", "attention"], "unrecognized arguments: -x"),
    # app
    (["app", "--port", "abc"], "argument --port: invalid port 'abc'"),
    (["app", "app.ipynb"], "inspector app: unrecognized arguments: app.ipynb"),
    (
        ["app", "--no-browser", "--import", "no_such_module_for_inspector"],
        "--import no_such_module_for_inspector: no such module here",
    ),
    # explain: argparse's part
    (["explain"], "inspector explain: the following arguments are required: family"),
    (["explain", "attention", "--dtype", "int8"], "argument --dtype: unknown dtype 'int8'"),
    (["explain", "attention", "--head-dim", "x"], "argument --head-dim: invalid int value: 'x'"),
    (["explain", "attention", "--head-dim"], "argument --head-dim: expected one argument"),
    (["explain", "attention", "--ndim", "2.5"], "argument --ndim: invalid int value: '2.5'"),
    (["explain", "attention", "--fwd", "train"], "argument --fwd: invalid choice: 'train'"),
    (["explain", "attention", "--select"], "argument --select: expected one argument"),
    (["explain", "attention", "--bogus"], "inspector explain: unrecognized arguments: --bogus"),
    (["explain", "attention", "rotary"], "inspector explain: unrecognized arguments: rotary"),
    # bench: argparse's part
    (["bench"], "inspector bench: the following arguments are required: part"),
    (["bench", "gpu"], "argument part: invalid choice: 'gpu'"),
    (["bench", "loader", "--repeats", "x"], "argument --repeats: invalid int value: 'x'"),
    (["bench", "loader", "--out"], "argument --out: expected one argument"),
    (["bench", "dispatch", "--bogus"], "inspector bench: unrecognized arguments: --bogus"),
    # rpc: argparse's part
    (["rpc"], "inspector rpc: the following arguments are required"),
    (["rpc", "nope"], "invalid choice: 'nope'"),
    (["rpc", "check"], "inspector rpc check: the following arguments are required: PLAN.json"),
    (["rpc", "check", "a.json", "b.json"], "inspector rpc check: unrecognized arguments: b.json"),
    (["rpc", "check", "--bogus", "a.json"], "inspector rpc check: unrecognized arguments: --bogus"),
    # lab
    (["lab", "--port", "abc"], "argument --port: invalid port 'abc': give a number from 1 to 65535"),
    (["lab", "--port", "0"], "invalid port 0"),
    (["lab", "--port", "70000"], "invalid port 70000"),
    (["lab", "--port", "-1"], "invalid port -1"),
    (["lab", "--port"], "argument --port: expected one argument"),
    (["lab", "--notebooks", "{tmp}/missing"], "--notebooks {tmp}/missing does not exist"),
    (["lab", "--notebooks", "{tmp}/file"], "--notebooks {tmp}/file is not a folder"),
    (["lab", "--notebooks", "{tmp}/empty", "--no-browser"], "no {tmp}/empty/00_tour.ipynb"),
    (["lab", "tour.ipynb"], "inspector lab: unrecognized arguments: tour.ipynb"),
    # report
    (["report"], "inspector report: the following arguments are required: OUT.html"),
    (["report", "a.html", "b.html"], "inspector report: unrecognized arguments: b.html"),
    (["report", ""], "OUT.html is empty"),
    (["report", "{tmp}"], "OUT.html {tmp} is a folder; give a file path such as {tmp}/report.html"),
    (["report", "{tmp}/new/"], "is a folder"),
    (["report", "{tmp}/missing/deeper/r.html"], "the folder {tmp}/missing/deeper does not exist; create it first"),
    (["report", "{tmp}/file/r.html"], "{tmp}/file is not a folder"),
    (["report", "/proc/inspector-report.html"], "cannot create files in /proc"),
    (["report", "/dev/null"], "/dev/null exists and is not a regular file"),
    (["report", "{tmp}/fifo"], "{tmp}/fifo exists and is not a regular file"),
    (["report", "r.html", "--plan"], "argument --plan: expected one argument"),
    (["report", "r.html", "--family", "attention", "--dtype", "int8"], "argument --dtype: unknown dtype 'int8'"),
    (["report", "r.html", "--head-dim", "64"], "--head-dim describes a call to an op family: add --family"),
    (["report", "r.html", "--loader-results", "{tmp}/missing.csv"], "cannot read --loader-results {tmp}/missing.csv"),
    (["report", "r.html", "--loader-results", "{tmp}/fifo"], "--loader-results {tmp}/fifo is not a regular file"),
    (["report", "r.html", "--loader-results", "{tmp}/file"], "is not a loader benchmark CSV"),
    (["report", "r.html", "--plan", "{tmp}/file"], "cannot read --plan {tmp}/file"),
    # what the verbs check themselves, beyond argparse
    (["explain", "atention"], "no op family 'atention'. Did you mean 'attention'?"),
    (["explain", "attention", "--select", "mth"], "attention has no row 'mth'. Did you mean 'math'?"),
    (["explain", "attention", "--extra", "kv_len=abc"], "--extra kv_len=abc"),
    (["explain", "attention", "--extra", "kv_len"], "--extra: "),
    (["explain", "attention", "--extra", "kvlen=4096"], "reads an axis 'kvlen'. Did you mean 'kv_len'?"),
    (["explain", "attention", "--extra", "kv_len="], "--extra kv_len=: no value after '='"),
    (["explain", "rotary", "--extra", "kv_len=abc"], "no row of rotary reads an axis 'kv_len'"),
    (["explain", "torch_sdpa", "--extra", "kv_len=abc"], "torch_sdpa axis kv_len='abc': give a whole number"),
    (["explain", "torch_sdpa", "--extra", "seqlen=3"], "no axis 'seqlen'. Did you mean 'seq_len'?"),
    (["explain", "torch_sdpa", "--extra", "dropout_p=2"], "dropout_p=2: give a probability between 0 and 1"),
    (["explain", "attention", "--ndim", "0"], "argument --ndim: must be at least 1, got 0"),
    (["explain", "attention", "--head-dim", "-5"], "argument --head-dim: must be at least 1, got -5"),
    (["explain", "torch_sdpa", "--cuda"], "no CUDA device"),
    (["explain", "rotary", "--import", "no_such_module_for_inspector"], "--import no_such_module_for_inspector"),
    (["bench", "loader", "--sizes", "1e9"], "--sizes '1e9'"),
    (["bench", "loader", "--sizes", "a,b"], "--sizes expects comma-separated floats"),
    (["bench", "loader", "--device", "cuda"], "--device cuda: no CUDA GPU here"),
    (["bench", "loader", "--out", "{tmp}"], "is a folder"),
    (["bench", "loader", "--out", "{tmp}/missing/r.csv"], "does not exist"),
    (["bench", "loader", "--out", "{tmp}/fifo"], "{tmp}/fifo exists and is not a regular file"),
    (["bench", "loader", "--plot", "{tmp}/fifo"], "--plot {tmp}/fifo exists and is not a regular file"),
    (["bench", "loader", "--out", "/dev/null"], "/dev/null exists and is not a regular file"),
    (["bench", "loader", "--out", ""], "--out is empty"),
    (["bench", "loader", "--out", "{tmp}/file/r.csv"], "is not a folder"),
    (["bench", "loader", "--plot", "/proc/inspector.png"], "cannot create files in /proc"),
    (["bench", "dispatch", "--sizes", "5"], "--sizes is a loader option"),
    (["bench", "rpc", "--device", "cuda"], "--device is a loader option"),
    (["rpc", "check", "{tmp}/missing.json"], "{tmp}/missing.json"),
    (["rpc", "check", "{tmp}/fifo"], "{tmp}/fifo"),
    (["rpc", "check", "{tmp}/file"], "{tmp}/file"),
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("usage")
    (tmp / "file").write_text("not a folder\n")
    os.mkfifo(tmp / "fifo")
    (tmp / "empty").mkdir()
    return tmp


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inspector", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_the_table_is_large_enough_and_every_verb_has_rows():
    assert len(BAD_INVOCATIONS) >= 40
    first_words = {args[0] for args, _ in BAD_INVOCATIONS if args and not args[0].startswith("-")}
    assert set(cli.VERBS) <= first_words


@pytest.mark.parametrize(
    ("args", "fragment"), BAD_INVOCATIONS, ids=[" ".join(args) or "<none>" for args, _ in BAD_INVOCATIONS]
)
def test_a_bad_invocation_exits_2_with_one_line_and_no_traceback(scratch, args, fragment):
    args = [a.format(tmp=scratch) for a in args]
    result = _run(args, scratch)
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert lines[0].startswith("inspector")
    assert fragment.format(tmp=scratch) in lines[0]


def test_report_to_a_missing_folder_creates_nothing(scratch):
    assert _run(["report", str(scratch / "tree" / "of" / "r.html")], scratch).returncode == 2
    assert not (scratch / "tree").exists()
    assert sorted(p.name for p in scratch.iterdir()) == ["empty", "fifo", "file"]  # no probe file left


def test_argparse_errors_name_the_help_of_the_verb_that_was_misused(scratch):
    line = _run(["explain", "attention", "--dtype", "int8"], scratch).stderr.strip()
    assert line.endswith("; see inspector explain --help")
    line = _run(["rpc", "check"], scratch).stderr.strip()
    assert line.endswith("; see inspector rpc check --help")


def _fake_verb(error: BaseException) -> SimpleNamespace:
    def run(args: object) -> int:
        raise error

    return SimpleNamespace(run=run, add_parser=cli._report.add_parser)


def test_an_engine_error_from_bad_input_becomes_one_line(monkeypatch):
    error = ConfigError("data.batch_size must be an int >= 1; got 0.", key="data.batch_size", source="t.yaml")
    monkeypatch.setitem(cli.VERBS, "report", _fake_verb(error))
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        code = cli.main(["report", "out.html"])
    assert code == 2
    assert stderr.getvalue() == (
        "inspector report: data.batch_size must be an int >= 1; got 0.; key = data.batch_size; source = t.yaml\n"
    )


def test_a_real_bug_still_surfaces_with_its_traceback(monkeypatch):
    monkeypatch.setitem(cli.VERBS, "report", _fake_verb(ZeroDivisionError("a bug")))
    with pytest.raises(ZeroDivisionError):
        cli.main(["report", "out.html"])


def test_an_interrupt_exits_130_with_one_line(monkeypatch):
    monkeypatch.setitem(cli.VERBS, "report", _fake_verb(KeyboardInterrupt()))
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        assert cli.main(["report", "out.html"]) == 130
    assert stderr.getvalue() == "inspector report: interrupted\n"


def test_help_still_exits_0(capsys):
    assert cli.main(["report", "--help"]) == 0
    assert "its folder must exist" in capsys.readouterr().out
