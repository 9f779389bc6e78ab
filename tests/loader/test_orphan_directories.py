"""A private directory outlives a process killed outright; the next loader's first save removes it, and only it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

from waiting import WAIT_S

from inspector.loader import FileStorageLoader
from inspector.loader._file_area import ABANDONED_AFTER_S, OWNER_NAME, PRIVATE_PREFIX, sweep_orphan_directories

if TYPE_CHECKING:
    import pytest

# Saves one payload into a private directory under $TMPDIR, prints the directory, then does what argv[1] says.
_OWNER = textwrap.dedent(
    """
    import os, signal, sys, time
    from inspector.loader import FileStorageLoader
    loader = FileStorageLoader(worker_num=1)
    storage = loader.save({"a": list(range(100))})
    assert loader.load(storage).result(60) == {"a": list(range(100))}
    print(os.path.dirname(storage.path), flush=True)
    how = sys.argv[1]
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "fork-then-kill":  # a forked child that outlives it
        ready, told = os.pipe()
        if os.fork() == 0:
            os.write(told, b"x")  # the fork's handlers have run in this child
            sys.stdin.readline()
            os._exit(0)
        os.read(ready, 1)
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.readline()  # "wait": live until told
    loader.shutdown()
    """
)


def start_owner(tmp_path: Path, how: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.Popen(
        [sys.executable, "-c", _OWNER, how], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def test_the_directory_of_a_killed_process_is_removed_by_the_next_loader(tmp_path: Path) -> None:
    owner = start_owner(tmp_path, "kill")
    directory = owner.stdout.readline().strip()  # type: ignore[union-attr]
    assert owner.wait(WAIT_S) == -signal.SIGKILL
    assert os.path.isdir(directory) and any(n.endswith(".istore") for n in os.listdir(directory))
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    script = "from inspector.loader import FileStorageLoader\nwith FileStorageLoader(worker_num=1) as l: l.save([1])"
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=WAIT_S)
    assert os.listdir(tmp_path) == []  # the orphan, and the second loader's own directory at its shutdown


def test_a_live_process_keeps_its_directory(tmp_path: Path) -> None:
    owner = start_owner(tmp_path, "wait")
    try:
        directory = owner.stdout.readline().strip()  # type: ignore[union-attr]
        assert sweep_orphan_directories(str(tmp_path)) == []
        assert os.path.isdir(directory)
    finally:
        owner.communicate("\n", timeout=WAIT_S)
    assert owner.returncode == 0
    assert os.listdir(tmp_path) == []  # its own shutdown removed it


def test_a_forked_child_does_not_keep_its_parents_directory_alive(tmp_path: Path) -> None:
    # As at a clean exit, where the parent's shutdown removes it: the directory is the parent's alone.
    owner = start_owner(tmp_path, "fork-then-kill")
    directory = owner.stdout.readline().strip()  # type: ignore[union-attr]
    try:
        assert owner.wait(WAIT_S) == -signal.SIGKILL
        assert sweep_orphan_directories(str(tmp_path)) == [directory]
        assert os.listdir(tmp_path) == []
    finally:
        owner.stdin.close()  # type: ignore[union-attr]  # the child reads this pipe: it ends now


def test_what_is_not_an_orphan_of_ours_is_left_alone(tmp_path: Path) -> None:
    no_owner = tmp_path / f"{PRIVATE_PREFIX}no-owner"
    no_owner.mkdir(mode=0o700)
    (no_owner / "keep.istore").write_bytes(b"x")
    shared = tmp_path / f"{PRIVATE_PREFIX}shared"
    shared.mkdir()
    (shared / OWNER_NAME).touch()
    shared.chmod(0o755)
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (target / OWNER_NAME).touch()
    (tmp_path / f"{PRIVATE_PREFIX}link").symlink_to(target)
    (tmp_path / f"{PRIVATE_PREFIX}file").write_bytes(b"x")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert sweep_orphan_directories(str(tmp_path)) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (no_owner / "keep.istore").exists() and (target / OWNER_NAME).exists()


def test_a_loader_in_this_process_holds_its_own_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with FileStorageLoader(worker_num=1) as loader:
        directory = os.path.dirname(loader.save([1]).path)
        assert sweep_orphan_directories(str(tmp_path)) == []
        assert os.path.isdir(directory)
    assert os.listdir(tmp_path) == []


def test_an_empty_directory_left_by_an_interrupted_creation_is_removed_once_it_is_a_minute_old(
    tmp_path: Path,
) -> None:
    # What an interrupt between mkdtemp and the .owner lock leaves: an empty private directory.
    abandoned, fresh = tmp_path / f"{PRIVATE_PREFIX}abandoned", tmp_path / f"{PRIVATE_PREFIX}fresh"
    abandoned.mkdir(mode=0o700)
    fresh.mkdir(mode=0o700)  # another process may be between its mkdtemp and its lock right now
    old = time.time() - 2 * ABANDONED_AFTER_S
    os.utime(abandoned, (old, old))
    shared = tmp_path / f"{PRIVATE_PREFIX}shared-empty"  # empty and old, but not private: not ours
    shared.mkdir()
    shared.chmod(0o755)
    os.utime(shared, (old, old))
    assert sweep_orphan_directories(str(tmp_path)) == [str(abandoned)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [fresh.name, shared.name]
