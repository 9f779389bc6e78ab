"""profile_loader on real loaders: a DataLoader with worker processes, generators, nested batches."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from inspector.errors import Cancelled
from inspector.loader import LoaderProfile, UnsupportedPayloadError, profile_loader
from inspector.loader.bench import profile_inspector_loader
from inspector.loader.bench.profile import batch_nbytes


class Episodes(Dataset):
    """Items nested like RL batches: a dict of a tensor, a numpy array and a list of tensors."""

    def __len__(self) -> int:
        return 256

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"obs": torch.full((4, 8), float(i)), "act": np.array([i], np.int64), "extra": [torch.ones(3)]}


def test_a_dataloader_with_workers_is_profiled_batch_by_batch() -> None:
    loader = DataLoader(Episodes(), batch_size=16, num_workers=2)
    progress: list[tuple[int, int, str]] = []
    profile = profile_loader(loader, batches=10, warmup=2, progress=lambda *a: progress.append(a))
    assert isinstance(profile, LoaderProfile) and profile.name == "DataLoader"
    assert profile.batches == 10 and not profile.exhausted and profile.first_batch_s > 0
    per_batch = 16 * (4 * 8 * 4 + 8 + 3 * 4)  # the obs, act and extra bytes of 16 items, collated
    assert profile.batch_bytes == (per_batch,) * 10
    assert profile.mb_per_s == pytest.approx(10 * per_batch / 2**20 / sum(profile.batch_seconds))
    assert profile.batches_per_s == pytest.approx(10 / sum(profile.batch_seconds))
    assert progress[-1][:2] == (13, 13)
    assert repr(profile).startswith("<LoaderProfile DataLoader: 10 batches, first ")
    html = profile._repr_html_()
    assert "<table>" in html and "batches/s" in html and "pandas" not in html
    frame = profile.to_frame()
    assert list(frame.columns) == ["batch", "seconds", "bytes", "mb_per_s"] and len(frame) == 10
    assert profile.verdict is None and profile.verdict_text() == ""  # no step: nothing to weigh the waits against
    if torch.cuda.is_available():
        assert profile.h2d is not None and profile.h2d.nbytes > 0
    else:
        assert profile.h2d is None


def test_bytes_are_counted_at_any_depth() -> None:
    batch = {"a": [(torch.ones(2, 3), np.zeros(5, np.float16))], "b": {"c": {"d": torch.ones(1, dtype=torch.int64)}}}
    assert batch_nbytes(batch) == 2 * 3 * 4 + 5 * 2 + 8
    assert batch_nbytes(["text", 3, None]) == 0


def test_a_generator_that_ends_early_is_profiled_on_what_it_gave() -> None:
    def three() -> Iterator[np.ndarray]:
        for i in range(5):
            yield np.full(10, i, np.float32)

    profile = profile_loader(three(), batches=50, warmup=1)
    assert profile.exhausted and profile.batches == 3 and profile.batch_bytes == (40, 40, 40)
    assert "ended early" in repr(profile)


def test_a_generator_profiled_in_part_is_closed() -> None:
    closed = threading.Event()

    class Endless:
        def __iter__(self) -> Iterator[int]:
            try:
                while True:
                    yield 1
            finally:
                closed.set()

    profile_loader(Endless(), batches=3, warmup=0)
    assert closed.is_set()


def test_cancel_stops_profiling() -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        profile_loader(range(100), batches=5, cancel=cancel)


@pytest.mark.parametrize(("kwargs", "message"), [({"batches": 0}, "batches must be"), ({"warmup": -1}, "warmup")])
def test_bad_arguments_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        profile_loader(range(10), **kwargs)
    with pytest.raises(TypeError, match="needs an iterable"):
        profile_loader(42)  # type: ignore[arg-type]


def test_the_inspector_loader_is_profiled_on_the_same_bytes() -> None:
    source = DataLoader(Episodes(), batch_size=16, num_workers=0)
    theirs = profile_loader(source, batches=4)
    ours = profile_inspector_loader(source, batches=4, sample=3, workers=1)
    assert ours.label == "inspector loader, I/O only: your dataset's work excluded" and ours.batches == 4
    assert ours.batch_bytes == theirs.batch_bytes


def test_batches_the_storage_format_cannot_hold_say_where() -> None:
    with pytest.raises(UnsupportedPayloadError, match=r"obj\['f'\]"):
        profile_inspector_loader([{"f": lambda: 0}], batches=1, workers=1)
