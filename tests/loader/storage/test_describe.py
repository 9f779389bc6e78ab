"""Reading a storage file's layout from its header alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from loader_payloads import payloads

from inspector.loader import FileStorage, StorageCorruptError, StorageNotFoundError, describe_storage
from inspector.loader.storage.encode import encode


def test_describe_names_every_leaf_with_its_place_type_and_bytes(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "a.istore")
    storage.save(
        [
            {
                "obs": np.zeros((4, 84, 84), np.float32),
                "act": torch.ones(2, dtype=torch.bfloat16),
                (1, "x"): np.zeros(3),
            },
            5,
            {"k": [np.ones(2)]},
        ]
    )
    info = describe_storage(storage)
    assert [(leaf.key_path, leaf.where, leaf.kind, leaf.dtype, leaf.shape, leaf.nbytes) for leaf in info.leaves] == [
        ((0, "obs"), "obj[0]['obs']", "numpy", "<f4", (4, 84, 84), 112896),
        ((0, "act"), "obj[0]['act']", "torch", "bfloat16", (2,), 4),
        ((0, (1, "x")), "obj[0][(1, 'x')]", "numpy", "<f8", (3,), 24),
        ((2, "k", 0), "obj[2]['k'][0]", "numpy", "<f8", (2,), 16),
    ]
    assert info.file_bytes == info.data_start + info.data_bytes and info.data_start % 64 == 0
    assert info.header_bytes < 400 and all(leaf.offset % 64 == 0 for leaf in info.leaves)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=payloads)
def test_describe_finds_exactly_the_array_leaves_encode_wrote(obj: object, tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "p.istore")
    storage.save(obj)
    info = describe_storage(storage)
    assert len(info.leaves) == encode(obj).arrays
    assert sum(leaf.nbytes for leaf in info.leaves) <= info.data_bytes
    loaded = storage.load()
    for leaf in info.leaves:
        if leaf.where.endswith("(a dict key)"):
            continue
        value = loaded
        for key in leaf.key_path:  # every key path indexes the loaded object down to that very leaf
            value = value[key]
        assert tuple(value.shape) == leaf.shape


def test_describe_checks_the_file_like_a_load(tmp_path: Path) -> None:
    with pytest.raises(StorageNotFoundError):
        describe_storage(tmp_path / "missing.istore")
    (tmp_path / "bad.istore").write_bytes(b"not a storage file at all, really not")
    with pytest.raises(StorageCorruptError, match="bad magic"):
        describe_storage(str(tmp_path / "bad.istore"))


def test_describe_refuses_a_fifo_at_once_instead_of_blocking(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "planted.istore"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    thread = threading.Thread(target=lambda: outcome.append(_raised(lambda: describe_storage(fifo))), daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "describe_storage blocked on a FIFO"
    assert isinstance(outcome[0], StorageCorruptError) and "a FIFO" in str(outcome[0])


def _raised(fn):  # type: ignore[no-untyped-def]
    try:
        fn()
    except BaseException as exc:
        return exc
    raise AssertionError("no error")
