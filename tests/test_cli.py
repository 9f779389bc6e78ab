"""The ``inspector`` command, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True, timeout=120)


def test_explain_prints_the_trace_and_exits_zero() -> None:
    result = run("explain", "attention", "--dtype", "bfloat16", "--head-dim", "64", "--no-grad",
                 "--extra", "kv_len=4096")
    assert result.returncode == 0, result.stderr
    assert "chunked: MATCH" in result.stdout and result.stdout.strip().endswith("=> chunked (origin=chain)")


def test_explain_exits_one_when_the_decision_is_an_error() -> None:
    result = run("explain", "attention", "--select", "chunked")
    assert result.returncode == 1
    assert "=> ERROR: attention row 'chunked'" in result.stdout


def test_explain_exits_two_on_bad_usage_with_the_known_families() -> None:
    result = run("explain", "nope")
    assert result.returncode == 2 and "Known: ['attention', 'rotary']" in result.stderr
    assert run("explain", "attention", "--extra", "kv_len").returncode == 2


def test_explain_json_is_the_structured_trace() -> None:
    result = run("explain", "rotary", "--head-dim", "32", "--json")
    payload = json.loads(result.stdout)
    assert payload["chosen"] == "fused" and payload["origin"] == "chain"
    assert payload["context"]["dtype"] == "float32"
    assert [row["name"] for row in payload["rows"]] == ["fused", "torch"]
    assert {"clause", "axis", "required", "actual", "passed"} <= set(payload["rows"][0]["checks"][0])


@pytest.mark.parametrize("verb", ["lab", "explain"])
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
