"""The embedded demo data backends: ``synthetic``, ``npz``, ``storage`` and ``hdf5`` (needs h5py).

``storage`` reads episode files through the shared-memory loader (``inspector.loader``).

Importing this package registers them on the default registry, so every failure shape is
visible out of the box: ``hdf5`` is recorded as an import error where h5py is not installed.
:func:`install` does the same for any registry (an isolated one in tests and notebooks).
"""

from __future__ import annotations

from inspector._free_names import may_register_backend
from inspector.backends import BackendRegistry, default_registry
from inspector.examples.data_backends import npz, storage, synthetic
from inspector.examples.data_backends.npz import write_example_episodes
from inspector.examples.data_backends.samples import example_configs
from inspector.examples.data_backends.storage import write_example_storage

ORIGIN_BACKENDS = "inspector.examples.data_backends"

__all__ = [
    "OPTIONAL",
    "example_configs",
    "install",
    "npz",
    "storage",
    "synthetic",
    "write_example_episodes",
    "write_example_storage",
]

# Optional backends: name -> (module, the install command that fixes a failed import).
OPTIONAL: dict[str, tuple[str, str]] = {"hdf5": ("inspector.examples.data_backends.hdf5", "pip install h5py")}


def install(registry: BackendRegistry | None = None) -> BackendRegistry:
    """Register the demo backends on ``registry`` (default: the process-wide one); idempotent.

    A name the user registered is kept: that demo is skipped (``inspector.examples.skipped()``).
    """
    import importlib

    target = registry if registry is not None else default_registry()
    for name, module in (("synthetic", synthetic), ("npz", npz), ("storage", storage)):
        if may_register_backend(target, name):
            target.register_module(name, module, origin=ORIGIN_BACKENDS)
    for name, (module_name, command) in OPTIONAL.items():
        if not may_register_backend(target, name):
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            target.record_import_error(name, exc, install=command, source=ORIGIN_BACKENDS)
        else:
            target.register_module(name, module, origin=ORIGIN_BACKENDS)
    return target


install()
