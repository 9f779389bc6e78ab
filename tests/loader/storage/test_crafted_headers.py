"""Headers crafted with any JSON value in any field, and loads whose sending fails: a clear error, never a hang.

Every file here is real and well checksummed (the CRC matches its header), so the header itself
is what each reader must refuse: ``FileStorage.load``, ``describe_storage`` and the loader's
workers, where the refusal reaches the load's future and the loader still shuts down.
"""

from __future__ import annotations

import json
import math
import os
import stat
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from waiting import WAIT_S

from inspector.loader import FileStorage, FileStorageLoader, StorageCorruptError, describe_storage
from inspector.loader.storage.encode import encode
from inspector.loader.storage.layout import PRELUDE_SIZE, align, pack_prelude

PAYLOADS = (
    {"obs": np.arange(6, dtype=np.float32), "t": torch.arange(4), "g": torch.ones(2, requires_grad=True)},
    [np.zeros((2, 3), np.uint8), (1, "two", None, 2.5, 3j, b"xy", 1 << 70, np.float16(1.5), True)],
    {"d": {1: "a", (2, 3): [np.ones(1)]}, "bf": torch.ones(3, dtype=torch.bfloat16)},
)


def forge(path: Path, header: object, data_len: int) -> Path:
    """A file with a valid prelude and checksum around ``header`` (any JSON, NaN and huge ints included)."""
    text = json.dumps(header).encode()
    pad = align(PRELUDE_SIZE + len(text)) - PRELUDE_SIZE - len(text)
    path.write_bytes(pack_prelude(text, data_len) + text + bytes(pad) + bytes(data_len))
    return path


def header_of(obj: Any) -> tuple[dict[str, Any], int]:
    encoded = encode(obj)
    return json.loads(encoded.header), encoded.data_len


def shut_down_within(loader: FileStorageLoader, bound: float) -> bool:
    thread = threading.Thread(target=loader.shutdown, daemon=True)
    thread.start()
    thread.join(bound)
    return not thread.is_alive()


HOSTILE = [
    ({"tokens": [["A", ["<f8"], [1], 0]]}, "bad dtype"),
    ({"tokens": [["A", {"kind": "f"}, [1], 0]]}, "bad dtype"),
    ({"tokens": [["T", ["float32"], [1], 0, False]], "tensor_span": [0, 8]}, "bad dtype"),
    ({"tokens": [["A", "<f8", {"rows": 1}, 0]]}, "bad shape"),
    ({"tokens": [["A", "<f8", [[1]], 0]]}, "bad shape"),
    ({"tokens": [["A", "<f8", [1.0], 0]]}, "bad shape"),
    ({"tokens": [["A", "<f8", [math.nan], 0]]}, "bad shape"),
    ({"tokens": [["A", "<f8", [True], 0]]}, "bad shape"),
    ({"tokens": [["A", "<f8", [1] * 65, 0]]}, "bad shape"),
    ({"tokens": [["A", "<f8", [0, 1 << 62], 0]]}, "no array can be that large"),
    ({"tokens": [["A", "<f8", [0, 1 << 80], 0]]}, "no array can be that large"),
    ({"tokens": [["A", "<f8", [1], -8]]}, "outside the data region"),
    ({"tokens": [["A", "<f8", [1], 1 << 70]]}, "outside the data region"),
    ({"tokens": [["S", ["<f8"], "00"]]}, "bad dtype"),
    ({"tokens": [["T", "float32", [2], 0, False]], "tensor_span": None}, "no tensor_span"),
    ({"tokens": [["T", "float32", [2], 0, False]], "tensor_span": [0, 4]}, "outside tensor_span"),
    ({"tokens": [["A", "<f8", [1], 0]], "tensor_span": [0, 64]}, "lies outside the data region"),
    ({"tokens": [["d", 1], {"key": 1}, 2]}, "unexpected token"),
]


@pytest.mark.parametrize(("header", "fragment"), HOSTILE)
def test_a_field_of_the_wrong_type_or_size_is_refused_by_every_reader(
    header: dict[str, Any], fragment: str, tmp_path: Path
) -> None:
    path = forge(tmp_path / "crafted.istore", header, data_len=8)
    with pytest.raises(StorageCorruptError, match=fragment):
        FileStorage(path).load()
    with pytest.raises(StorageCorruptError, match=fragment):
        describe_storage(path)


def test_a_crafted_header_fails_its_load_through_the_future_and_the_loader_still_shuts_down(tmp_path: Path) -> None:
    with FileStorageLoader(worker_num=1, ttl=None) as loader:
        good = loader.save({"a": np.arange(4)})
        futures = [
            loader.load(FileStorage(forge(tmp_path / f"{i}.istore", header, 8)))
            for i, (header, _) in enumerate(HOSTILE)
        ]
        for future, (_header, fragment) in zip(futures, HOSTILE, strict=True):
            error = future.exception(WAIT_S)
            assert isinstance(error, StorageCorruptError) and fragment in str(error)
        assert int(loader.load(good).result(WAIT_S)["a"].sum()) == 6
        assert loader.status().workers[0].restarts == 0 and loader.status().loads_failed == len(HOSTILE)
        assert shut_down_within(loader, WAIT_S)


any_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=1 << 60)
    | st.integers(max_value=-1)
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from(["<f8", "|u1", "|b1", "float32", "bfloat16", "A", "T", "l", "d", "S", "f", "I"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


def replace_somewhere(doc: Any, draw: Any) -> Any:
    """``doc`` with the value at a drawn path (any depth, any field) replaced by a drawn JSON value."""
    paths: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        node, where = stack.pop()
        paths.append(where)
        children = enumerate(node) if isinstance(node, list) else node.items() if isinstance(node, dict) else ()
        stack.extend((value, (*where, key)) for key, value in children)
    where = draw(st.sampled_from(paths[1:]))
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = draw(any_json)
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.integers(0, len(PAYLOADS) - 1), changes=st.integers(1, 3))
def test_any_field_replaced_by_any_json_value_loads_or_is_refused_as_corrupt(
    data: st.DataObject, which: int, changes: int, tmp_path: Path, loader: FileStorageLoader
) -> None:
    doc, data_len = header_of(PAYLOADS[which])
    for _ in range(changes):
        doc = replace_somewhere(doc, data.draw)
    path = forge(tmp_path / "fuzzed.istore", doc, data_len)
    outcomes = []
    for read in (
        lambda: FileStorage(path).load(),
        lambda: describe_storage(path),
        lambda: loader.load(FileStorage(path)).result(WAIT_S),
    ):
        try:
            read()
            outcomes.append("loaded")
        except StorageCorruptError:
            outcomes.append("refused")
    assert len(set(outcomes)) == 1, outcomes  # every reader judges a header alike


def test_a_load_whose_sending_raises_fails_with_that_error_and_the_pool_carries_on(loader: FileStorageLoader) -> None:
    before = loader.status()
    storage = loader.save({"a": np.arange(3)})
    future = loader.load(FileStorage(f"{storage.path}\0tail"))  # os.open raises ValueError: no OSError, no file
    assert isinstance(future.exception(WAIT_S), ValueError)
    assert int(loader.load(storage).result(WAIT_S)["a"].sum()) == 3
    after = loader.status()
    assert after.running and [w.pid for w in after.workers] == [w.pid for w in before.workers]
    assert after.loads_failed == before.loads_failed + 1


def test_a_world_writable_directory_without_the_sticky_bit_is_warned_about_once(tmp_path: Path) -> None:
    shared, sticky, private = tmp_path / "shared", tmp_path / "sticky", tmp_path / "private"
    for folder, mode in ((shared, 0o777), (sticky, 0o1777), (private, 0o700)):
        folder.mkdir()
        os.chmod(folder, mode)
    with pytest.warns(UserWarning, match="no sticky bit") as caught:
        FileStorageLoader(shared, ttl=None).shutdown()
    assert "chmod" in str(caught[0].message) and caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FileStorageLoader(shared, ttl=None).shutdown()  # once per directory
        FileStorageLoader(sticky, ttl=None).shutdown()
        FileStorageLoader(private, ttl=None).shutdown()
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o777  # told, not changed
