"""``read_whole``: a small cached file read into a recycled buffer with one call, then checked like any reader's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.loader import StorageCorruptError
from inspector.loader.pool.inline import Buffers
from inspector.loader.storage.handles import FileStorage
from inspector.loader.storage.reader import HEAD_READ, _fill_nowait, read_whole

pytestmark = pytest.mark.skipif(not hasattr(os, "RWF_NOWAIT"), reason="RWF_NOWAIT is Linux-only")


def everything(size: int) -> bool:
    return True


def saved(tmp_path: Path, obj: object, name: str = "p.istore") -> str:
    storage = FileStorage(str(tmp_path / name))
    storage.save(obj)
    return storage.path


def reads_back(path: str, expected: int) -> object:
    whole = read_whole(path, Buffers().lease, expected, everything)
    assert whole is not None
    image, size, plan = whole
    assert size == os.path.getsize(path) and image.size >= size
    assert image[:size].tobytes() == Path(path).read_bytes()
    return plan.build(image)


@pytest.mark.parametrize("leaf", [3, 5000, 300_000])  # inside the first read, just past it, far past it
@pytest.mark.parametrize("hint", ["none", "exact", "low", "high"])
def test_a_file_reads_back_whole_whatever_size_it_was_expected_to_have(tmp_path: Path, leaf: int, hint: str) -> None:
    path = saved(tmp_path, {"obs": np.arange(leaf, dtype=np.float32), "tag": "x"})
    size = os.path.getsize(path)
    expected = {"none": 0, "exact": size, "low": size // 3, "high": size * 2}[hint]
    got = reads_back(path, expected)
    assert got["tag"] == "x" and got["obs"].tolist() == list(range(leaf))  # type: ignore[index]


def test_a_file_larger_than_admitted_is_left_unchecked_for_a_worker(tmp_path: Path) -> None:
    path = str(tmp_path / "big")
    Path(path).write_bytes(b"not a storage file at all" * 1000)  # a worker reads the header first and refuses it
    seen: list[int] = []

    def small_only(size: int) -> bool:
        seen.append(size)
        return size <= 1000

    assert read_whole(path, Buffers().lease, 0, small_only) is None
    assert read_whole(path, Buffers().lease, 500, small_only) is None
    assert seen == [25_000, 25_000]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda b: b[:-1], "truncated"),
        (lambda b: b + b"\0", "trailing bytes"),
        (lambda b: b[:40] + bytes([b[40] ^ 0xFF]) + b[41:], "checksum"),
        (lambda b: b[:10], "truncated"),
        (lambda b: b"", "not a storage file"),
    ],
)
def test_a_damaged_file_is_refused_as_every_reader_refuses_it(tmp_path: Path, change: object, words: str) -> None:
    path = saved(tmp_path, {"obs": np.arange(2000, dtype=np.float32)})
    intact = Path(path).read_bytes()
    Path(path).write_bytes(change(intact))  # type: ignore[operator]
    for expected in (0, len(intact)):
        with pytest.raises(StorageCorruptError, match=words):
            read_whole(path, Buffers().lease, expected, everything)


def test_a_fifo_is_left_for_a_worker_to_name(tmp_path: Path) -> None:
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with pytest.raises(BlockingIOError):
        read_whole(fifo, Buffers().lease, 0, everything)


def test_a_read_that_ends_on_a_page_boundary_reads_on_to_the_end(tmp_path: Path) -> None:
    page = os.sysconf("SC_PAGE_SIZE")
    path = tmp_path / "pages"
    path.write_bytes(bytes(range(256)) * (3 * page // 256))
    fd = os.open(path, os.O_RDONLY)
    try:
        view = np.zeros(5 * page, np.uint8)
        assert _fill_nowait(fd, view.data, 0) == 3 * page  # a 0-byte read at the end, not a short one, ends it
        assert view[: 3 * page].tobytes() == path.read_bytes()
        assert _fill_nowait(fd, view.data[: HEAD_READ + 7], 0) == HEAD_READ + 7  # a full buffer stops it
    finally:
        os.close(fd)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 20_000), extra=st.binary(max_size=64), expected=st.integers(0, 40_000))
def test_any_cut_or_extension_of_a_file_is_read_exactly_or_refused(
    tmp_path: Path, cut: int, extra: bytes, expected: int
) -> None:
    path = saved(tmp_path, {"obs": np.arange(2500, dtype=np.int32), "s": "y"}, "fuzz.istore")
    intact = Path(path).read_bytes()
    damaged = intact[: len(intact) - min(cut, len(intact))] + extra
    Path(path).write_bytes(damaged)
    try:
        whole = read_whole(path, Buffers().lease, expected, everything)
    except StorageCorruptError:
        assert damaged != intact
        return
    assert whole is not None and damaged == intact
    image, size, plan = whole
    assert image[:size].tobytes() == intact
    assert plan.build(image)["obs"].tolist() == list(range(2500))
