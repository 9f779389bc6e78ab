"""Every reader checks the whole header before it reads or reserves the body (a huge sparse file, a FIFO),
and compiled headers build fresh objects."""

from __future__ import annotations

import json
import os
import struct
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from waiting import WAIT_S

from inspector.loader import FileStorage, FileStorageLoader, StorageCorruptError, describe_storage
from inspector.loader.storage.encode import encode
from inspector.loader.storage.layout import PRELUDE, PRELUDE_SIZE, align, pack_prelude

HUGE = 1 << 30


def sparse_file(path: Path, header: bytes, crc_of: bytes | None = None) -> Path:
    """A sparse ``HUGE``-byte file: a prelude whose sizes match the file exactly, then ``header``, then holes."""
    data_start = align(PRELUDE_SIZE + len(header))
    prelude = pack_prelude(crc_of if crc_of is not None else header, HUGE - data_start)
    if crc_of is not None:  # the checksum of other bytes, the length of these
        magic, version, flags, crc, _length, data_len = PRELUDE.unpack(prelude)
        prelude = PRELUDE.pack(magic, version, flags, crc, len(header), data_len)
    with open(path, "wb") as file:
        file.write(prelude + header)
        file.truncate(HUGE)
    return path


def garbled(tmp_path: Path) -> Path:
    return sparse_file(tmp_path / "garbled.istore", bytes(100), crc_of=b"something else")


def too_long(tmp_path: Path) -> Path:
    """A sound header (one 8-byte leaf) in a file that declares a GiB of array data."""
    return sparse_file(tmp_path / "too-long.istore", encode({"a": np.zeros(1)}).header)


def not_json(tmp_path: Path) -> Path:
    return sparse_file(tmp_path / "not-json.istore", b"{not json at all")


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "garbled": (garbled, "checksum"),
    "too_long": (too_long, "arrays end at byte 8"),
    "not_json": (not_json, "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_huge_sparse_file_with_a_bad_header_is_refused_by_a_synchronous_load_without_reading_it(
    case: str, tmp_path: Path
) -> None:
    make, fragment = CASES[case]
    path = make(tmp_path)
    tracemalloc.start()
    try:
        with pytest.raises(StorageCorruptError, match=fragment):
            FileStorage(path).load()
        assert tracemalloc.get_traced_memory()[1] < 1 << 20  # nothing the size of the file was allocated
    finally:
        tracemalloc.stop()
    with pytest.raises(StorageCorruptError, match=fragment):
        describe_storage(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_huge_sparse_file_with_a_bad_header_is_refused_by_the_loader_before_any_segment_is_made(
    case: str, tmp_path: Path
) -> None:
    make, fragment = CASES[case]
    path = make(tmp_path)
    with FileStorageLoader(tmp_path, ttl=None, worker_num=1) as loader:
        loader.start()
        before = loader.status()
        with pytest.raises(StorageCorruptError, match=fragment):
            loader.load(FileStorage(path)).result(WAIT_S)
        after = loader.status()
        assert after.segment_bytes == before.segment_bytes  # not one segment was reserved for it
        assert after.workers[0].loads_done == before.workers[0].loads_done  # and no worker read it


def test_a_header_longer_than_the_first_read_is_read_whole(loader: FileStorageLoader) -> None:
    obj = {f"leaf-{i}": np.full(3, i, np.int16) for i in range(400)}
    storage = loader.save(obj)
    assert describe_storage(storage).data_start > 4096
    for got in (storage.load(), loader.load(storage).result(WAIT_S)):
        assert list(got) == list(obj) and all((got[k] == v).all() for k, v in obj.items())


def test_loads_of_one_header_build_fresh_containers_each_time(loader: FileStorageLoader, tmp_path: Path) -> None:
    first = loader.save({"a": [np.arange(3), {"b": ()}], "c": (1, [2]), "d": [], "e": {}})
    twin = FileStorage(tmp_path / "twin.istore")
    twin.save({"a": [np.arange(3) + 10, {"b": ()}], "c": (1, [2]), "d": [], "e": {}})  # the same header bytes
    results: list[Any] = [loader.load(first).result(WAIT_S), first.load(), loader.load(twin).result(WAIT_S)]
    results[0]["a"].append("mutated")
    results[0]["c"][1].append("mutated")
    results[0]["d"].append("mutated")
    results[0]["e"]["x"] = 1
    for got in results[1:]:
        assert got["a"][1:] == [{"b": ()}] and got["c"] == (1, [2]) and got["d"] == [] and got["e"] == {}
    assert results[2]["a"][0].tolist() == [10, 11, 12] and results[1]["a"][0].tolist() == [0, 1, 2]


def test_a_tensor_may_be_a_dict_key_a_numpy_array_may_not(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    storage = FileStorage(tmp_path / "keys.istore")
    storage.save({torch.tensor([1, 2]): "tensor key"})
    ((key, value),) = storage.load().items()
    assert key.tolist() == [1, 2] and value == "tensor key"
    forged = tmp_path / "forged.istore"
    header = json.dumps({"tokens": [["d", 1], ["A", "<i8", [1], 0], 1]}).encode()
    pad = align(PRELUDE_SIZE + len(header)) - PRELUDE_SIZE - len(header)
    forged.write_bytes(pack_prelude(header, 8) + header + bytes(pad) + bytes(8))
    with pytest.raises(StorageCorruptError, match="unusable dict key"):
        describe_storage(forged)


def test_a_huge_sparse_file_is_refused_without_reserving_its_size(loader: FileStorageLoader, tmp_path: Path) -> None:
    sparse = tmp_path / "huge.istore"
    with open(sparse, "wb") as file:
        file.write(b"\x89ISTORE\n" + struct.pack("<HHIQQ", 1, 0, 0, 100, 100))  # a good start, tiny sizes
        file.truncate(2 << 30)
    bytes_before = loader.status().segment_bytes
    with pytest.raises(StorageCorruptError, match=r"expected \d+ bytes, file has 2147483648"):
        loader.load(FileStorage(sparse)).result(WAIT_S)
    assert loader.status().segment_bytes - bytes_before < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(StorageCorruptError):
            FileStorage(sparse).load()
        assert tracemalloc.get_traced_memory()[1] < 1 << 20  # nothing the size of the file was allocated
    finally:
        tracemalloc.stop()


def test_a_fifo_planted_at_a_storage_path_fails_at_once(loader: FileStorageLoader, tmp_path: Path) -> None:
    fifo = tmp_path / "planted.istore"
    os.mkfifo(fifo)
    with pytest.raises(StorageCorruptError, match="a FIFO"):
        loader.load(FileStorage(fifo)).result(WAIT_S)
    with pytest.raises(StorageCorruptError, match="a FIFO"):
        FileStorage(fifo).load()
