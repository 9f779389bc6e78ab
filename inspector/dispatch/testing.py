"""Test support: run a block against the dispatch engine and put every piece of state back.

Use it as a fixture::

    @pytest.fixture(autouse=True)
    def _isolated():
        with isolated_dispatch():
            yield
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from inspector._isolation import restoring
from inspector.dispatch.registry import REGISTRY


@contextmanager
def isolated_dispatch(*, keep_families: bool = True) -> Iterator[None]:
    """Snapshot the dispatch registry (families, third-party rows, the process tier, recorders,
    warn-once memory: NOTE [ Dispatch state ]) and restore it on exit.

    Inside, the process tier starts unseeded (the environment is read afresh), no recorder runs
    and warn-once memory is empty. ``keep_families=False`` also starts from an empty registry.
    """
    with restoring(REGISTRY):
        REGISTRY.restore_state(REGISTRY.fresh_state(keep_families=keep_families))
        yield
