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

from inspector.dispatch import notices, recorder, registry, selection


@contextmanager
def isolated_dispatch(*, keep_families: bool = True) -> Iterator[None]:
    """Snapshot families, third-party rows, the process tier and recorders; restore on exit.

    Inside, the process tier starts unseeded (the environment is read afresh) and warn-once
    memory is empty. ``keep_families=False`` also starts from an empty registry.
    """
    saved_registry = registry.registry_state()
    saved_mapping, saved_aliases = selection.TIER.mapping, dict(selection.TIER.aliases)
    saved_recorders, saved_stopped = list(recorder.ACTIVE), list(recorder._last_stopped)
    if not keep_families:
        registry.restore_registry(registry.RegistryState({}, {}))
    selection.restore_tier(selection.UNSEEDED, saved_aliases)
    notices.reset_notices()
    try:
        yield
    finally:
        registry.restore_registry(saved_registry)
        selection.restore_tier(saved_mapping, saved_aliases)
        recorder.ACTIVE[:] = saved_recorders
        recorder._last_stopped[:] = saved_stopped
        notices.reset_notices()
