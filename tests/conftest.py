"""Suite-wide markers: skip reasons are computed once here."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

import inspector.dispatch.torch_sdpa  # noqa: F401  (PyTorch's own family: part of every test's baseline)

CHROMIUM = "/usr/bin/chromium"


def _cuda_skip_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False)"
    return None


def _browser_skip_reason() -> str | None:
    # Browser tests are part of the default run: only an explicit opt-out skips them, so a
    # missing Chromium fails loudly in CI instead of hiding behind a skip.
    if os.environ.get("INSPECTOR_SKIP_BROWSER") == "1":
        return "INSPECTOR_SKIP_BROWSER=1"
    return None


def pytest_configure(config: pytest.Config) -> None:
    """The suite, and every process it starts (CLI runs, notebook kernels, JupyterLab), keeps benchmark
    history in a folder of this run, never in the user's cache."""
    folder = tempfile.mkdtemp(prefix="inspector-test-cache-")
    config.stash[_CACHE_KEY] = (folder, os.environ.get("INSPECTOR_CACHE_DIR"))
    os.environ["INSPECTOR_CACHE_DIR"] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder, before = config.stash.get(_CACHE_KEY, (None, None))
    if folder is None:
        return
    shutil.rmtree(folder, ignore_errors=True)
    if before is None:
        os.environ.pop("INSPECTOR_CACHE_DIR", None)
    else:
        os.environ["INSPECTOR_CACHE_DIR"] = before


_CACHE_KEY = pytest.StashKey[tuple[str, "str | None"]]()
CUDA_SKIP = _cuda_skip_reason()
BROWSER_SKIP = _browser_skip_reason()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if CUDA_SKIP and "cuda" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=CUDA_SKIP))
        if BROWSER_SKIP and "browser" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=BROWSER_SKIP))


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if not path:
        pytest.fail("Chromium is missing: run `make test` (it installs Debian's chromium) or apt-get install chromium")
    return path


@pytest.fixture(autouse=True)
def _isolated_dispatch(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Every test sees a clean process selection and leaves the dispatch registry as it found it."""
    from inspector.dispatch.testing import isolated_dispatch

    monkeypatch.delenv("INSPECTOR_OPS", raising=False)
    monkeypatch.delenv("INSPECTOR_BACKEND", raising=False)
    with isolated_dispatch():
        yield


# multiprocessing's interpreter-wide helpers; another test may have started them, they are not orphans.
SHARED_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


@pytest.fixture
def new_processes():  # type: ignore[no-untyped-def]
    """``new_processes()`` lists the live child processes started since the test began."""
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}

    def live() -> list[psutil.Process]:
        found = []
        for process in psutil.Process().children(recursive=True):
            try:
                if process.pid in before or process.status() == psutil.STATUS_ZOMBIE:
                    continue
                if not any(helper in " ".join(process.cmdline()) for helper in SHARED_HELPERS):
                    found.append(process)
            except psutil.NoSuchProcess:
                continue
        return found

    return live
