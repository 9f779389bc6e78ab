"""The embedded demo data backends: ``synthetic``, ``npz``, ``storage`` and ``hdf5`` (needs h5py).

``storage`` reads episode files through the shared-memory loader (``inspector.loader``).

Importing this package registers them on the default registry, so every failure shape is
visible out of the box: ``hdf5`` is recorded as an import error where h5py is not installed.
:func:`install` does the same for any registry (an isolated one in tests and notebooks).
"""

from __future__ import annotations

from inspector.backends import BackendRegistry, default_registry
from inspector.examples.data_backends import npz, storage, synthetic
from inspector.examples.data_backends.npz import write_example_episodes
from inspector.examples.data_backends.storage import write_example_storage

__all__ = ["OPTIONAL", "install", "npz", "storage", "synthetic", "write_example_episodes", "write_example_storage"]

# Optional backends: name -> (module, the install command that fixes a failed import).
OPTIONAL: dict[str, tuple[str, str]] = {"hdf5": ("inspector.examples.data_backends.hdf5", "pip install h5py")}


def install(registry: BackendRegistry | None = None) -> BackendRegistry:
    """Register the demo backends on ``registry`` (default: the process-wide one); idempotent."""
    import importlib

    target = registry if registry is not None else default_registry()
    target.register_module("synthetic", synthetic, origin="inspector.examples.data_backends")
    target.register_module("npz", npz, origin="inspector.examples.data_backends")
    target.register_module("storage", storage, origin="inspector.examples.data_backends")
    for name, (module_name, command) in OPTIONAL.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            target.record_import_error(name, exc, install=command, source="inspector.examples.data_backends")
        else:
            target.register_module(name, module, origin="inspector.examples.data_backends")
    return target


install()
