"""The storage file on disk: atomic, private, checked before use, and never executed."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loader_payloads import write_hostile

from inspector.loader import FileStorage, StorageCorruptError, StorageNotFoundError, UnsupportedPayloadError
from inspector.loader.storage.layout import ALIGN, MAGIC, PRELUDE_SIZE, align, pack_prelude


def test_a_file_crafted_to_run_code_when_unpickled_is_rejected_and_runs_nothing(tmp_path: Path) -> None:
    hostile, marker = tmp_path / "hostile.istore", tmp_path / "pwned"
    write_hostile(hostile, marker)
    with pytest.raises(StorageCorruptError, match="bad magic") as info:
        FileStorage(hostile).load()
    assert info.value.path == str(hostile)
    assert not marker.exists()


def test_files_are_written_atomically_with_owner_only_permissions(tmp_path: Path) -> None:
    target = tmp_path / "a.istore"
    FileStorage(target).save({"x": np.arange(3)})
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["a.istore"]  # no temporary file left behind


def test_a_failed_save_leaves_neither_the_file_nor_a_temporary(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedPayloadError):
        FileStorage(tmp_path / "a.istore").save({"x": object()})
    assert os.listdir(tmp_path) == []


def test_overwriting_replaces_the_file_in_one_step(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "a.istore")
    storage.save([1])
    inode_before = os.stat(storage.path).st_ino
    storage.save([2])
    assert storage.load() == [2] and os.stat(storage.path).st_ino != inode_before


def test_the_layout_is_prelude_header_then_aligned_data(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "a.istore")
    storage.save({"a": np.arange(4, dtype=np.int32)})
    raw = Path(storage.path).read_bytes()
    assert raw[:8] == MAGIC
    header_len = int.from_bytes(raw[16:24], "little")
    header = json.loads(raw[PRELUDE_SIZE : PRELUDE_SIZE + header_len])
    start = align(PRELUDE_SIZE + header_len)
    assert start % ALIGN == 0 and len(raw) == start + 16
    assert np.frombuffer(raw[start:], np.int32).tolist() == [0, 1, 2, 3]
    assert header["tokens"][0] == ["d", 1]


def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(StorageNotFoundError, match="does not exist") as info:
        FileStorage(tmp_path / "nope.istore").load()
    assert isinstance(info.value, FileNotFoundError) and info.value.path.endswith("nope.istore")


@pytest.mark.parametrize("keep", [0, 5, PRELUDE_SIZE - 1, PRELUDE_SIZE + 3, -1])
def test_truncated_files_are_reported_as_truncated(keep: int, tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "a.istore")
    storage.save({"a": np.arange(100)})
    raw = Path(storage.path).read_bytes()
    Path(storage.path).write_bytes(raw[:keep])
    with pytest.raises(StorageCorruptError) as info:
        storage.load()
    assert ("truncated" in info.value.reason) or (keep == 0 and "not a storage file" in info.value.reason)


def test_trailing_garbage_is_reported(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "a.istore")
    storage.save([1])
    with open(storage.path, "ab") as file:
        file.write(b"xx")
    with pytest.raises(StorageCorruptError, match="trailing bytes"):
        storage.load()


def test_a_garbled_header_fails_its_checksum(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "a.istore")
    storage.save({"abc": 1})
    raw = bytearray(Path(storage.path).read_bytes())
    raw[PRELUDE_SIZE + 3] ^= 0x01
    Path(storage.path).write_bytes(bytes(raw))
    with pytest.raises(StorageCorruptError, match="checksum"):
        storage.load()


def forge(path: Path, header: object, data: bytes = b"") -> None:
    """A file with a valid prelude and checksum around an arbitrary (hostile) header."""
    text = json.dumps(header).encode()
    pad = align(PRELUDE_SIZE + len(text)) - PRELUDE_SIZE - len(text)
    path.write_bytes(pack_prelude(text, len(data)) + text + bytes(pad) + data)


@pytest.mark.parametrize(
    ("header", "fragment"),
    [
        ({"tokens": [["A", "|O", [1], 0]]}, "not a raw-bytes dtype"),
        ({"tokens": [["A", "<f8", [4], 0]]}, "outside the data region"),
        ({"tokens": [["A", "<f8", [-1], 0]]}, "bad shape"),
        ({"tokens": [["T", "os.system", [1], 0, False]]}, "unknown torch dtype"),
        ({"tokens": [["T", "int64", [1], 0, True]]}, "cannot build a leaf"),
        ({"tokens": [["l", 2], 1]}, "ends before the tree is complete"),
        ({"tokens": [1, 2]}, "after the tree is complete"),
        ({"tokens": [["d", 1], ["l", 0], 1]}, "unusable dict key"),
        ({"tokens": [["x", 1]]}, "unknown token tag"),
        ({"tokens": [1.5]}, "unexpected token"),
        ({"no": "tokens"}, "no token list"),
        ([1, 2], "no token list"),
    ],
)
def test_hostile_headers_are_rejected_with_a_reason(header: object, fragment: str, tmp_path: Path) -> None:
    path = tmp_path / "forged.istore"
    forge(path, header, data=bytes(8))
    with pytest.raises(StorageCorruptError, match=fragment):
        FileStorage(path).load()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_any_single_byte_change_loads_or_raises_storage_corrupt_error(
    position: int, value: int, tmp_path: Path
) -> None:
    storage = FileStorage(tmp_path / "fuzz.istore")
    storage.save({"obs": [np.arange(6, dtype=np.float32), (1, "two", None)], "n": 3.5})
    raw = bytearray(Path(storage.path).read_bytes())
    raw[position % len(raw)] = value
    Path(storage.path).write_bytes(bytes(raw))
    with contextlib.suppress(StorageCorruptError):
        storage.load()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=4)
    | st.sampled_from(["l", "t", "d", "A", "T", "S", "f", "c", "b", "I", "<f4", "|b1", "float32", "bfloat16"]),
    lambda inner: st.lists(inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(json_values, max_size=8), span=st.none() | st.lists(st.integers(0, 64), min_size=2, max_size=2))
def test_arbitrary_well_checksummed_headers_never_escape_as_other_errors(
    tokens: list[object], span: list[int] | None, tmp_path: Path
) -> None:
    path = tmp_path / "forged.istore"
    forge(path, {"tokens": tokens, "arrays": 0, "tensor_span": span}, data=bytes(64))
    with contextlib.suppress(StorageCorruptError):
        FileStorage(path).load()
