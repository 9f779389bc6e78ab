"""Data backends: named modules that build a training run's data, and the verbs they publish.

A backend is a module (or any object) exposing ``build(cfg, ctx) -> DataBundle``; it may
publish more verbs (``stats``, ``describe``, ...). Consumers look it up by ``dataset_type``::

    from inspector import backends

    cfg = backends.load_config("train.yaml")        # also makes its backend the active one
    cfg.model                                       # other top-level sections pass through untouched
    bundle = backends.build_data(cfg, backends.BuildContext(rank=0, world_size=1))
    if backends.data_backend().supports("stats"):
        print(backends.data_backend().stats(cfg))

The module-level functions are methods of one default :class:`BackendRegistry`;
:func:`isolated_registry` gives tests and notebooks a clean one. Backends declared under the
``inspector.data_backends`` entry-point group are discovered on first use. Every error this
package raises on purpose is a :class:`BackendError` (and the builtin it would otherwise be).
"""

from __future__ import annotations

from inspector.backends._batch import FieldInfo, ValueStats, describe_batch, value_stats
from inspector.backends._bundle import BuildContext, DataBundle
from inspector.backends._config import (
    DEFAULT_DATASET_TYPE,
    DataConfig,
    TrainConfig,
    parse_config,
    resolve_dataset_type,
)
from inspector.backends._default import (
    active_backend,
    available_backends,
    backend_for,
    build_data,
    data_backend,
    default_registry,
    has_data_backend,
    isolated_registry,
    load_config,
    record_import_error,
    register,
    register_module,
    reset_active_backend,
    snapshot,
)
from inspector.backends._errors import (
    ActiveBackendConflictError,
    BackendError,
    BackendImportError,
    BuildContextError,
    ConfigError,
    ConfigNotFoundError,
    ConfigTypeError,
    InvalidBackendError,
    InvalidBackendNameError,
    MissingOperationError,
    NoActiveBackendError,
    UnknownBackendError,
    UnknownVerbError,
)
from inspector.backends._plugins import ENTRY_POINT_GROUP, PluginInfo
from inspector.backends._proxy import BackendProxy
from inspector.backends._registry import BackendRegistry
from inspector.backends._snapshot import BackendInfo, ImportFailure, RegistrySnapshot
from inspector.backends._verbs import VerbInfo, declared_verbs

__all__ = [
    "ActiveBackendConflictError",
    "BackendError",
    "BackendImportError",
    "BackendInfo",
    "BackendProxy",
    "BackendRegistry",
    "BuildContext",
    "BuildContextError",
    "ConfigError",
    "ConfigNotFoundError",
    "ConfigTypeError",
    "DEFAULT_DATASET_TYPE",
    "DataBundle",
    "DataConfig",
    "ENTRY_POINT_GROUP",
    "FieldInfo",
    "ImportFailure",
    "InvalidBackendError",
    "InvalidBackendNameError",
    "MissingOperationError",
    "NoActiveBackendError",
    "PluginInfo",
    "RegistrySnapshot",
    "TrainConfig",
    "UnknownBackendError",
    "UnknownVerbError",
    "ValueStats",
    "VerbInfo",
    "active_backend",
    "available_backends",
    "backend_for",
    "build_data",
    "data_backend",
    "declared_verbs",
    "default_registry",
    "describe_batch",
    "has_data_backend",
    "isolated_registry",
    "load_config",
    "parse_config",
    "record_import_error",
    "register",
    "register_module",
    "reset_active_backend",
    "resolve_dataset_type",
    "snapshot",
    "value_stats",
]
