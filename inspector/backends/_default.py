"""The process-wide default registry, its module-level verbs, and the test fixture helper."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from inspector._isolation import restoring
from inspector.backends._registry import BackendRegistry

_DEFAULT = BackendRegistry()


def default_registry() -> BackendRegistry:
    """The registry behind ``register_module``, ``backend_for``, ``load_config`` and friends."""
    return _DEFAULT


register_module = _DEFAULT.register_module
register = _DEFAULT.register
record_import_error = _DEFAULT.record_import_error
available_backends = _DEFAULT.available_backends
backend_for = _DEFAULT.backend_for
build_data = _DEFAULT.build_data
load_config = _DEFAULT.load_config
data_backend = _DEFAULT.data_backend
has_data_backend = _DEFAULT.has_data_backend
active_backend = _DEFAULT.active_backend
reset_active_backend = _DEFAULT.reset_active
snapshot = _DEFAULT.snapshot


@contextmanager
def isolated_registry(*, keep_backends: bool = False, discover_plugins: bool = False) -> Iterator[BackendRegistry]:
    """Run a block against a clean default registry and restore everything afterwards.

    Inside, the module-level functions see no backends, no import errors, no active backend
    and (unless ``discover_plugins``) no plugins; ``keep_backends=True`` keeps the current
    registrations and import errors but still clears the active backend. On exit, even after an
    exception, the registry is exactly as before. This is the fixture helper for tests::

        @pytest.fixture
        def registry():
            with isolated_registry() as reg:
                yield reg

    It swaps process-wide state, so do not use it while other threads use the registry.
    """
    with restoring(_DEFAULT):
        _DEFAULT._clear(discover_plugins=discover_plugins, keep_backends=keep_backends)
        yield _DEFAULT
