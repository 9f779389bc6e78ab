"""The loader works from every way Python code is started, with no ``if __name__ == "__main__":`` guard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from loader_probes import wait_gone
from waiting import PROCESS_WAIT_S

# No main guard, on purpose: a multiprocessing spawn child would re-run all of this.
SCRIPT = """
import json, os, sys
sys.path[:0] = {path!r}
import numpy as np
from inspector.loader import FileStorageLoader
loader = FileStorageLoader(ttl=None, worker_num=2)
got = loader.load(loader.save({{"a": np.arange(5)}})).result(60)
pids = [w.pid for w in loader.status().workers]
loader.shutdown()
print(json.dumps({{"sum": int(got["a"].sum()), "pids": pids, "main": __name__}}), flush=True)
"""


def check_output(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    line = [ln for ln in result.stdout.splitlines() if ln.startswith("{")][-1]
    info = json.loads(line)
    assert info["sum"] == 10 and len(info["pids"]) == 2
    assert wait_gone(info["pids"]) == []
    return info


def script_text() -> str:
    return textwrap.dedent(SCRIPT).format(path=sys.path)


@pytest.mark.slow
def test_a_plain_script_without_a_main_guard(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(script_text())
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=PROCESS_WAIT_S)
    assert check_output(result)["main"] == "__main__"
    assert result.stdout.count('"sum"') == 1  # the script ran once: no worker re-ran it


@pytest.mark.slow
def test_a_module_in_the_working_directory_shadowing_the_standard_library_never_reaches_a_worker(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "socket.py").write_text("raise ImportError('the socket.py of the working directory was imported')\n")
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT).format(path=[p for p in sys.path if p not in ("", ".")]))
    result = subprocess.run(
        [sys.executable, str(script)], cwd=work, capture_output=True, text=True, timeout=PROCESS_WAIT_S
    )
    check_output(result)


@pytest.mark.slow
def test_code_piped_on_stdin() -> None:
    result = subprocess.run(
        [sys.executable, "-"], input=script_text(), capture_output=True, text=True, timeout=PROCESS_WAIT_S
    )
    check_output(result)


@pytest.mark.slow
def test_python_dash_c() -> None:
    result = subprocess.run(
        [sys.executable, "-c", script_text()], capture_output=True, text=True, timeout=PROCESS_WAIT_S
    )
    check_output(result)


@pytest.mark.slow
def test_a_module_run_with_dash_m_from_another_directory(tmp_path: Path) -> None:
    package = tmp_path / "job"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(script_text())
    result = subprocess.run(
        [sys.executable, "-m", "job.train"], cwd=tmp_path, capture_output=True, text=True, timeout=PROCESS_WAIT_S
    )
    check_output(result)


@pytest.mark.slow
def test_a_torchrun_job(tmp_path: Path) -> None:
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    if torchrun is None:
        pytest.fail("torchrun is missing from this environment (it ships with torch)")
    script = tmp_path / "job.py"
    script.write_text(script_text())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [torchrun, "--standalone", "--nproc-per-node", "1", str(script)],
        capture_output=True,
        text=True,
        timeout=PROCESS_WAIT_S,
        env=env,
    )
    check_output(result)


@pytest.mark.slow
def test_a_jupyter_kernel(tmp_path: Path) -> None:
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        outputs: list[str] = []

        def collect(message: dict) -> None:
            if message["msg_type"] == "stream":
                outputs.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                outputs.append("ERROR " + "\n".join(message["content"]["traceback"]))

        reply = client.execute_interactive(script_text(), timeout=PROCESS_WAIT_S, output_hook=collect)
        assert reply["content"]["status"] == "ok", "".join(outputs)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    info = json.loads([ln for ln in "".join(outputs).splitlines() if ln.startswith("{")][-1])
    assert info["sum"] == 10 and wait_gone(info["pids"]) == []
