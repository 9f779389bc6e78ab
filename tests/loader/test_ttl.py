"""Files past their ttl: deleted by a thread that never holds up save or load, and a load says why they are gone."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from waiting import WAIT_S, wait_until

from inspector.loader import FileStorageLoader, StorageNotFoundError


def test_files_older_than_ttl_are_deleted_and_loading_them_says_so(tmp_path: Path) -> None:
    with FileStorageLoader(tmp_path, ttl=0.2, worker_num=1) as loader:
        storage = loader.save([1])
        assert os.path.exists(storage.path)
        wait_until(lambda: not os.path.exists(storage.path), what="the expired file to be deleted")
        with pytest.raises(StorageNotFoundError, match="expired") as info:
            loader.load(storage).result(WAIT_S)
        assert info.value.expired and "ttl=0.2" in str(info.value) and "raise ttl" in str(info.value)


def test_saving_and_loading_proceed_while_the_cleanup_thread_is_deleting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deleting, release, real_unlink = threading.Event(), threading.Event(), os.unlink

    def slow_unlink(path: Any, *args: Any, **kwargs: Any) -> None:  # a deletion stuck on a slow disk
        if threading.current_thread().name == "inspector-loader-ttl":
            deleting.set()
            release.wait(WAIT_S)
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", slow_unlink)
    with FileStorageLoader(tmp_path, ttl=0.05, worker_num=1) as loader:
        expired = [loader.save([i]).path for i in range(50)]
        try:
            assert deleting.wait(WAIT_S)
            fresh = [loader.save([i]) for i in range(20)]  # while the cleanup thread is mid-deletion
            assert loader.load(fresh[3]).result(WAIT_S) == [3]
            assert not release.is_set() and sum(os.path.exists(p) for p in expired) == 50
        finally:
            release.set()
        paths = expired + [s.path for s in fresh]
        wait_until(lambda: not any(os.path.exists(p) for p in paths), what="every expired file to be deleted")


def test_a_ttl_far_in_the_future_keeps_the_ttl_thread_alive(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with FileStorageLoader(tmp_path, ttl=1e12, worker_num=1) as loader:
        storage = loader.save([1])
        assert loader.load(storage).result(WAIT_S) == [1]
        threads = [t for t in threading.enumerate() if t.name == "inspector-loader-ttl"]
        assert threads and all(t.is_alive() for t in threads)
