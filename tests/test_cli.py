"""The ``inspector`` command, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True, timeout=120)


def test_explain_prints_the_trace_and_exits_zero() -> None:
    result = run(
        "explain", "attention", "--dtype", "bfloat16", "--head-dim", "64", "--no-grad", "--extra", "kv_len=4096"
    )
    assert result.returncode == 0, result.stderr
    assert "chunked: MATCH" in result.stdout and result.stdout.strip().endswith("=> chunked (origin=chain)")


def test_explain_exits_one_when_the_decision_is_an_error() -> None:
    result = run("explain", "attention", "--select", "chunked")
    assert result.returncode == 1
    assert "=> ERROR: attention row 'chunked'" in result.stdout


def test_explain_exits_two_on_bad_usage_with_the_known_families() -> None:
    result = run("explain", "nope")
    assert result.returncode == 2 and "Known: attention, rotary, torch_sdpa" in result.stderr
    assert run("explain", "attention", "--extra", "kv_len").returncode == 2


def test_explain_json_is_the_structured_trace() -> None:
    result = run("explain", "rotary", "--head-dim", "32", "--json")
    payload = json.loads(result.stdout)
    assert payload["chosen"] == "fused" and payload["origin"] == "chain"
    assert payload["context"]["dtype"] == "float32"
    assert [row["name"] for row in payload["rows"]] == ["fused", "torch"]
    assert {"clause", "axis", "required", "actual", "passed"} <= set(payload["rows"][0]["checks"][0])


@pytest.mark.parametrize("verb", ["lab", "app", "explain"])
def test_every_verb_has_help(verb: str) -> None:
    result = run(verb, "--help")
    assert result.returncode == 0 and "usage: inspector" in result.stdout


def test_lab_without_the_tour_says_where_to_run_it(tmp_path) -> None:
    result = run("lab", "--no-browser", "--notebooks", str(tmp_path))
    assert result.returncode == 2 and "00_tour.ipynb" in result.stderr


def test_explain_works_without_jupyter_libraries() -> None:
    code = (
        "import sys, inspector.cli as cli; cli.main(['explain', 'rotary']); "
        "print('LOADED', [m for m in ('ipywidgets', 'IPython', 'pandas', 'matplotlib') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "LOADED []" in result.stdout, result.stdout + result.stderr


def test_rpc_check_exits_one_when_torch_would_refuse_the_plan(tmp_path) -> None:
    from inspector.rpc import TopologyPlan

    good = TopologyPlan.full_mesh(2, 2)
    bad = TopologyPlan.build(2, {"worker0": 2, "worker1": 1}, {"worker0": {"worker1": {"cuda:1": "cuda:1"}}})
    (tmp_path / "good.json").write_text(good.to_json())
    (tmp_path / "bad.json").write_text(bad.to_json())
    ok = run("rpc", "check", str(tmp_path / "good.json"))
    assert ok.returncode == 0 and ok.stdout.startswith("OK: init_rpc would accept this plan"), ok.stderr
    refused = run("rpc", "check", str(tmp_path / "bad.json"))
    assert refused.returncode == 1
    assert "REFUSED" in refused.stdout and "has target devices with invalid indices" in refused.stdout
    assert run("rpc", "check", str(tmp_path / "missing.json")).returncode == 2
    (tmp_path / "broken.json").write_text("{not json")
    assert run("rpc", "check", str(tmp_path / "broken.json")).returncode == 2


def test_bench_dispatch_writes_csv_and_plot(tmp_path) -> None:
    result = run("bench", "dispatch", "--out", str(tmp_path / "d.csv"), "--plot", str(tmp_path / "d.png"))
    assert result.returncode in (0, 1), result.stderr  # 1 only when a speed target is missed on a busy machine
    assert "op_backend enter+exit" in result.stdout and "[target" in result.stdout
    assert "6/6 dispatch: done" in result.stderr  # the progress bar
    header = (tmp_path / "d.csv").read_text().splitlines()[0]
    assert header.startswith("part,name,value,unit,baseline")
    assert (tmp_path / "d.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_bench_loader_runs_a_small_grid(tmp_path) -> None:
    result = run(
        "bench",
        "loader",
        "--sizes",
        "1",
        "--layouts",
        "columnar",
        "--repeats",
        "1",
        "--out",
        str(tmp_path / "l.csv"),
        "--plot",
        str(tmp_path / "l.png"),
    )
    assert result.returncode in (0, 1), result.stderr
    rows = (tmp_path / "l.csv").read_text().splitlines()
    assert rows[0].startswith("layout,size_mb,workers") and len(rows) == 1 + 5  # ours + 4 baselines
    assert "columnar 1 MiB vs DataLoader" in result.stdout
    assert (tmp_path / "l.png").read_bytes().startswith(b"\x89PNG")
    assert run("bench", "loader", "--sizes", "x").returncode == 2


def test_report_writes_a_self_contained_file_with_what_the_command_line_gives(tmp_path) -> None:
    """The environment, a plan, a described call and loader results from another process, in one report."""
    import torch

    from inspector.cli._loader_results import csv_text
    from inspector.loader.bench import BenchRow
    from inspector.rpc import TopologyPlan

    plan = TopologyPlan.build(2, {"worker0": 2, "worker1": 1}, {"worker0": {"worker1": {"cuda:1": "cuda:1"}}})
    (tmp_path / "plan.json").write_text(plan.to_json())
    rows = [
        BenchRow("steps", 4.0, 2, "cpu", method, mb_s, mb_s, mb_s, 3, 8, 4, 0)
        for method, mb_s in [
            ("ours", 4321.0),
            ("sync", 2000.0),
            ("mp_queue", 300.0),
            ("dataloader", 500.0),
            ("memcpy", 9000.0),
        ]
    ]
    (tmp_path / "r.csv").write_text(csv_text(row.as_dict() for row in rows))
    result = run(
        "report",
        str(tmp_path / "out.html"),
        "--plan",
        str(tmp_path / "plan.json"),
        "--loader-results",
        str(tmp_path / "r.csv"),
        "--family",
        "attention",
        "--dtype",
        "bf16",
        "--head-dim",
        "64",
        "--no-grad",
        "--extra",
        "kv_len=4096",
    )
    assert result.returncode == 0 and "wrote" in result.stdout, result.stderr
    text = (tmp_path / "out.html").read_text()
    assert "Operator dispatch" in text and "Data backends" in text and "RPC device maps" in text
    assert "data:image/png;base64," in text
    environment = text[text.index("<h2>Environment</h2>") : text.index("<h2>Operator dispatch</h2>")]
    for item in ("inspector", "commit", "Python", "numpy", "CPU", "GPU", torch.__version__):
        assert f"<td>{item}</td>" in environment
    assert "attention: chunked (origin=chain)" in text  # the call described by the flags, as explain decides it
    assert "dtype=bfloat16 ndim=4 head_dim=64" in text
    assert "has target devices with invalid indices" in text  # the plan, checked
    assert "4,321" in text and "No benchmark has run" not in text  # the loader results measured elsewhere
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html", "plan.json", "r.csv"]


@pytest.mark.parametrize("verb", [["bench", "--help"], ["rpc", "check", "--help"], ["report", "--help"]])
def test_new_verbs_have_help(verb: list[str]) -> None:
    result = run(*verb)
    assert result.returncode == 0 and "usage: inspector" in result.stdout


@pytest.mark.slow
def test_lab_serves_jupyterlab_on_the_tour(tmp_path) -> None:
    from pathlib import Path

    from servers import free_port, serve

    port = free_port()
    command = [sys.executable, "-m", "inspector", "lab", "--no-browser", "--port", str(port)]
    with serve(
        "inspector lab",
        command,
        tmp_path,
        f"http://127.0.0.1:{port}/api/status",
        cwd=Path(__file__).resolve().parents[1],
    ):
        pass  # serve() returns once the server answered (a 403 without the token counts)
    log = (tmp_path / "inspector lab.log").read_text()
    assert "jupyterlab | extension was successfully loaded" in log  # the server's own start-up log
    assert "ServerApp.token config is deprecated" not in log


def test_the_lab_server_ignores_only_the_token_warning() -> None:
    code = (
        "import sys, warnings; from inspector.cli import _lab_server as s; import jupyterlab.labapp as l; "
        "l.main = lambda: (warnings.warn(s.TOKEN_WARNING + ' in jupyter-server 2.0', DeprecationWarning), "
        "warnings.warn('another deprecation', DeprecationWarning), 0)[2]; "
        "warnings.simplefilter('always'); sys.exit(s.main())"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "another deprecation" in result.stderr and "ServerApp.token" not in result.stderr


def test_the_app_notebook_is_the_inspector_alone_in_app_wording() -> None:
    import nbformat

    from inspector.cli._app import voila_command, voila_folder

    notebook = nbformat.read(voila_folder() / "app.ipynb", as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.source for cell in code] == ["import inspector\n\ninspector.show()"] and code[0].outputs == []
    prose = " ".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown").lower()
    assert "cell" not in prose and "notebook" not in prose
    template = (voila_folder() / "voila" / "templates" / "inspector" / "index.html.j2").read_text()
    assert "https://" not in template  # the template links nothing outside the machine
    command = voila_command(voila_folder() / "app.ipynb", 8870, no_browser=True, dark=True)
    assert "--template=inspector" in command and "--theme=dark" in command and "--port=8870" in command
