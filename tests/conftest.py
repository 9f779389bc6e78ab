"""Suite-wide markers: skip reasons are computed once here."""

from __future__ import annotations

import os
import shutil

import pytest

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
