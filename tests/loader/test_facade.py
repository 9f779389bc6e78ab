"""The public facade of inspector.loader."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import pytest

import inspector.loader as loader


def test_all_is_sorted_and_complete() -> None:
    assert loader.__all__ == sorted(loader.__all__)  # the project's rule: plain sorted() order
    assert set(loader._HOMES) == set(loader.__all__)
    for name in loader.__all__:
        home = importlib.import_module(f"inspector.loader.{loader._HOMES[name]}")
        assert getattr(loader, name) is getattr(home, name)
    assert set(loader.__all__) <= set(dir(loader))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        loader.nope  # noqa: B018


def test_a_worker_imports_only_the_standard_library() -> None:
    code = "import json, sys, inspector.loader.pool.worker_process; print(json.dumps('numpy' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) is False


def test_the_documented_signatures_hold() -> None:
    assert str(inspect.signature(loader.StorageLoader.load)) == (
        "(self, storage: 'Storage', callback: 'Callable[[Any], Any] | None' = None, *, "
        "on_error: 'Callable[[BaseException], Any] | None' = None, device: 'Any' = None) -> 'Future[Any]'"
    )
    params = inspect.signature(loader.FileStorageLoader).parameters
    first_three = [(p.name, p.default) for p in list(params.values())[:3]]
    assert first_three == [("dirname", None), ("ttl", 20), ("worker_num", 3)]
    assert inspect.signature(loader.StorageLoader).parameters["worker_num"].default == 3
    assert inspect.isabstract(loader.StorageLoader) and inspect.isabstract(loader.Storage)


def test_importing_the_loader_and_its_bench_pulls_in_neither_pandas_nor_torch() -> None:
    code = (
        "import json, sys, inspector.loader, inspector.loader.bench; "
        "print(json.dumps([m for m in ('pandas', 'matplotlib', 'ipywidgets', 'torch') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []
