"""A process that forks while it holds a loader: the child leaves the parent's loader alone and can load itself."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from loader_probes import wait_gone
from waiting import PROCESS_WAIT_S

FORK_SCRIPT = """
import json, os, sys
sys.path[:0] = {path!r}
import numpy as np
from inspector.loader import FileStorageLoader

loader = FileStorageLoader(ttl=None, worker_num=2)
storage = loader.save({{"a": np.arange(4)}})
assert loader.load(storage).result(60)["a"].sum() == 6
pids = [w.pid for w in loader.status().workers]
directory = loader.dirname
child = os.fork()
if child == 0:
    {child_body}
    sys.exit(0)  # a normal exit: atexit hooks and finalizers run in the child
_, status = os.waitpid(child, 0)
after = loader.load(storage).result(60)["a"].sum()
print(json.dumps({{"child_status": os.waitstatus_to_exitcode(status), "dir_kept": os.path.isdir(directory),
                   "parent_load": int(after), "same_workers": [w.pid for w in loader.status().workers] == pids,
                   "pids": pids}}), flush=True)
loader.shutdown()
"""


def run_fork_script(tmp_path: Path, child_body: str) -> dict:
    script = tmp_path / "fork.py"
    script.write_text(textwrap.dedent(FORK_SCRIPT).format(path=sys.path, child_body=child_body))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=PROCESS_WAIT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    info = json.loads(result.stdout.splitlines()[-1])
    assert wait_gone(info["pids"]) == []
    return info


@pytest.mark.slow
def test_a_forked_child_that_exits_leaves_the_parents_directory_and_workers_alone(tmp_path: Path) -> None:
    info = run_fork_script(tmp_path, "pass")
    assert info == {**info, "child_status": 0, "dir_kept": True, "parent_load": 6, "same_workers": True}


@pytest.mark.slow
def test_a_load_in_a_forked_child_works_with_the_childs_own_workers(tmp_path: Path) -> None:
    body = """got = loader.load(storage).result(60)
    mine = [w.pid for w in loader.status().workers]
    ok = int(got["a"].sum()) == 6 and not set(mine) & set(pids) and loader.dirname is None
    loader.shutdown()
    os._exit(0 if ok else 3)"""
    info = run_fork_script(tmp_path, body)
    assert info == {**info, "child_status": 0, "dir_kept": True, "parent_load": 6, "same_workers": True}


@pytest.mark.slow
def test_a_child_that_saves_removes_only_its_own_private_directory(tmp_path: Path) -> None:
    body = """mine = loader.save([1])
    ok = loader.dirname not in (None, directory) and loader.load(mine).result(60) == [1]
    created = loader.dirname
    loader.shutdown()
    os._exit(0 if ok and not os.path.exists(created) else 3)"""
    info = run_fork_script(tmp_path, body)
    assert info == {**info, "child_status": 0, "dir_kept": True, "parent_load": 6}


DATALOADER_SCRIPT = """
import json, os, sys
sys.path[:0] = {path!r}
import numpy as np, torch
from torch.utils.data import DataLoader
from inspector.loader import FileStorageLoader

loader = FileStorageLoader(ttl=None, worker_num=1)
storage = loader.save({{"a": np.arange(4)}})
loader.load(storage).result(60)
data = DataLoader(list(range(8)), batch_size=2, num_workers=2, multiprocessing_context="fork")
batches = [b.tolist() for b in data]
print(json.dumps({{"batches": len(batches), "after": int(loader.load(storage).result(60)["a"].sum()),
                   "dir_kept": os.path.isdir(loader.dirname)}}), flush=True)
loader.shutdown()
"""


@pytest.mark.slow
def test_dataloader_workers_forked_from_a_process_with_a_loader_leave_it_working(tmp_path: Path) -> None:
    script = tmp_path / "dl.py"
    script.write_text(textwrap.dedent(DATALOADER_SCRIPT).format(path=sys.path))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=PROCESS_WAIT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == {"batches": 4, "after": 6, "dir_kept": True}
