"""The one atomic-write helper: whole files or nothing, and never over something that is not a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inspector._files import atomic_write, atomic_write_text


def test_atomic_write_replaces_a_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old")

    def write(file: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, write)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_target_that_is_not_a_regular_file_is_never_replaced(tmp_path: Path, kind: str) -> None:
    target = tmp_path / kind
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    with pytest.raises(FileExistsError, match="is not a regular file"):
        atomic_write_text(target, "data")
    assert target.is_fifo() if kind == "fifo" else target.is_dir()
    assert [p.name for p in tmp_path.iterdir()] == [kind]
