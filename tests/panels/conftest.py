from __future__ import annotations

from collections.abc import Iterator

import pytest

import inspector.examples  # noqa: F401
from inspector.dispatch.testing import isolated_dispatch


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("INSPECTOR_OPS", raising=False)
    monkeypatch.delenv("INSPECTOR_BACKEND", raising=False)
    with isolated_dispatch():
        yield

