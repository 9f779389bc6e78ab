"""Fixtures for the RPC tests: a registry that forgets what a test registered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inspector.rpc import scoped_backends


@pytest.fixture
def backends() -> Iterator[None]:
    """Registrations made by the test are undone afterwards."""
    with scoped_backends():
        yield
