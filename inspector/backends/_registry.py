"""``BackendRegistry``: named data backends, their verbs, import failures and the active backend."""

from __future__ import annotations

import difflib
import inspect
import logging
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from inspector.backends._bundle import BuildContext, DataBundle
from inspector.backends._config import TrainConfig, parse_config
from inspector.backends._config_files import describe_source, read_config
from inspector.backends._errors import (
    ActiveBackendConflictError,
    BackendImportError,
    ConfigTypeError,
    InvalidBackendError,
    InvalidBackendNameError,
    MissingOperationError,
    NoActiveBackendError,
    UnknownBackendError,
)
from inspector.backends._plugins import ENTRY_POINT_GROUP, PluginInfo, load_plugins
from inspector.backends._proxy import BackendProxy, proxy_class
from inspector.backends._snapshot import BackendInfo, ImportFailure, RegistrySnapshot
from inspector.backends._verbs import BUILD, declared_verbs, describe_verb, why_not_verb

logger = logging.getLogger("inspector.backends")


def _call_site(depth: int) -> str:
    """``file.py:12 in caller`` for the frame ``depth`` levels above the caller of this helper.

    A notebook cell's compiled file name is kept whole (``/tmp/ipykernel_1/2.py``,
    ``<ipython-input-3-ab>``), so a view can name the cell it stands for.
    """
    frame = sys._getframe(depth + 1)
    filename = frame.f_code.co_filename
    path = Path(filename)
    shown = (
        filename if filename.startswith("<ipython-input-") or path.parent.name.startswith("ipykernel_") else path.name
    )
    return f"{shown}:{frame.f_lineno} in {frame.f_code.co_name}"


def _caller_module(depth: int) -> str:
    return str(sys._getframe(depth + 1).f_globals.get("__name__", "?"))


def _describe_target(target: Any) -> tuple[str, str]:
    if isinstance(target, ModuleType):
        kind = "legacy" if target.__name__.startswith("_legacy_backend_shim_") else "module"
        return kind, target.__name__
    if inspect.isclass(target):
        return "class", f"{target.__module__}.{target.__qualname__}"
    return "object", f"{type(target).__module__}.{type(target).__qualname__} instance"


@dataclass(frozen=True)
class _Entry:
    target: Any
    verbs: tuple[str, ...]
    origin: str
    proxy: type[BackendProxy]


@dataclass(frozen=True)
class _Failure:
    error: BaseException
    install: str | None
    source: str | None


@dataclass(frozen=True)
class _State:
    entries: dict[str, _Entry]
    failures: dict[str, _Failure]
    active: str | None
    active_set_by: str | None
    plugins: tuple[PluginInfo, ...] | None
    discover: bool


class BackendRegistry:
    """Data backends by ``dataset_type`` name; the module-level functions use a default one.

    Separate instances share nothing, so a test or a notebook can experiment on its own
    registry. ``discover_plugins`` turns entry-point discovery on (see NOTE [ Plugin discovery ]).
    """

    def __init__(self, *, discover_plugins: bool = True, entry_point_group: str = ENTRY_POINT_GROUP) -> None:
        self._lock = threading.RLock()
        self._group = entry_point_group
        self._discover = discover_plugins
        self._discovering = False
        self._entries: dict[str, _Entry] = {}
        self._failures: dict[str, _Failure] = {}
        self._active: str | None = None
        self._active_set_by: str | None = None
        self._plugins: tuple[PluginInfo, ...] | None = None

    def __repr__(self) -> str:
        return f"<BackendRegistry backends={sorted(self._entries)} active={self._active!r}>"

    # --- registration -------------------------------------------------------------------
    def register_module(self, name: str, backend: Any, *, origin: str | None = None) -> None:
        """Register a module (or any object) exposing ``build(cfg, ctx) -> DataBundle`` and more verbs.

        Re-registering a name with a different backend replaces it and logs one warning; the
        same backend again is a no-op. Verbs are fixed now (see NOTE [ Declared verbs ]).
        """
        if not isinstance(name, str) or not name:
            raise InvalidBackendNameError(f"A backend name must be a non-empty string; got {name!r}.")
        if not callable(getattr(backend, BUILD, None)):
            raise InvalidBackendError(
                f"Backend module for {name!r} must expose a ``build(cfg, ctx) -> DataBundle`` callable; "
                f"got {backend!r}."
            )
        verbs = declared_verbs(backend)
        entry = _Entry(backend, verbs, origin or f"registered by {_caller_module(1)}", proxy_class(verbs))
        with self._lock:
            previous = self._entries.get(name)
            if previous is not None and previous.target is backend:
                return
            if previous is not None:
                logger.warning("overwriting existing backend registration for %r", name)
            self._entries[name] = entry

    def register(self, name: str, build_callable: Any, *, origin: str | None = None) -> None:
        """The legacy one-callable form: ``build_callable`` becomes the ``build`` of a shim module."""
        shim = ModuleType(f"_legacy_backend_shim_{name}")
        shim.build = build_callable  # type: ignore[attr-defined]
        shim.__verbs__ = (BUILD,)  # type: ignore[attr-defined]
        self.register_module(name, shim, origin=origin or f"registered by {_caller_module(1)}")

    def record_import_error(
        self, name: str, error: BaseException, *, install: str | None = None, source: str | None = None
    ) -> None:
        """Remember why backend ``name`` could not be imported; ``install`` is the fix to suggest."""
        with self._lock:
            self._failures[name] = _Failure(error, install, source or f"recorded by {_caller_module(1)}")

    # --- lookup -------------------------------------------------------------------------
    def is_registered(self, name: str) -> bool:
        """Whether ``name`` is registered now (does not trigger plugin discovery)."""
        return name in self._entries

    def origin_of(self, name: str) -> str | None:
        """Who registered backend ``name`` (``None`` when it is not registered); no discovery."""
        entry = self._entries.get(name)
        return None if entry is None else entry.origin

    def available_backends(self) -> list[str]:
        """Registered backend names, sorted; names that only failed to import are not listed."""
        self._ensure_plugins()
        return sorted(self._entries)

    def backend_for(self, name: str) -> BackendProxy:
        """A proxy for backend ``name``; unknown and failed-to-import names raise with the next step."""
        self._ensure_plugins()
        entry = self._entries.get(name)  # single dict reads are atomic; no lock on the hot path
        if entry is not None:
            return entry.proxy(name, entry.target, self.missing_operation)
        failure = self._failures.get(name)
        if failure is not None:
            raise BackendImportError(
                name, failure.error, self.available_backends(), failure.install, failure.source
            ) from failure.error
        known = self.available_backends()
        suggestions = difflib.get_close_matches(name, [*known, *self._failures], n=1) if isinstance(name, str) else []
        raise UnknownBackendError(name, known, suggestions)

    def missing_operation(self, backend_name: str, op: str) -> MissingOperationError:
        """The error for ``backend_for(backend_name).<op>``, hinting who has ``op`` or how to spell it."""
        with self._lock:
            entries = list(self._entries.items())
            own = self._entries.get(backend_name)
        supported_by = [n for n, e in entries if op in e.verbs and n != backend_name]
        every_verb = sorted({v for _, e in entries for v in e.verbs})
        suggestions = [] if supported_by else difflib.get_close_matches(op, every_verb, n=2)
        why = why_not_verb(own.target, op, own.verbs) if own is not None else None
        if why is not None:
            return MissingOperationError(backend_name, op, supported_by, (), not_a_verb=why[0], declare=why[1])
        return MissingOperationError(backend_name, op, supported_by, suggestions)

    def build_data(self, cfg: Any, ctx: BuildContext | None = None) -> DataBundle:
        """``backend_for(cfg.data.dataset_type).build(cfg, ctx)``; a raw dict is refused."""
        if not hasattr(cfg, "data") or not hasattr(cfg.data, "dataset_type"):
            raise ConfigTypeError(
                f"build_data() expects a typed TrainConfig, got {type(cfg).__name__}. "
                "Load via inspector.backends.load_config() instead of passing a raw dict."
            )
        result: DataBundle = self.backend_for(cfg.data.dataset_type).build(cfg, ctx or BuildContext())
        return result

    # --- config and the active backend --------------------------------------------------
    def load_config(self, source: Any, *, activate: bool = True) -> TrainConfig:
        """Read a YAML/TOML/JSON file or a mapping into a :class:`TrainConfig` and make its backend active.

        The active backend is set once per process: loading a config naming the same backend
        again is a no-op; a different one raises :class:`ActiveBackendConflictError`.
        """
        where = "<TrainConfig>" if isinstance(source, TrainConfig) else describe_source(source)
        self._ensure_plugins()
        known = {*self._entries, *self._failures}
        if isinstance(source, TrainConfig):
            cfg = source
            if cfg.data.dataset_type not in known:
                cfg = parse_config({"data": {"dataset_type": cfg.data.dataset_type}}, known=known, source=where)
        else:
            cfg = parse_config(read_config(source), known=known, source=where)
        self.backend_for(cfg.data.dataset_type)  # a failed import raises here, chained
        if activate:
            shown = where if where.startswith("<") else repr(where)
            self.set_active(cfg.data.dataset_type, set_by=f"load_config({shown}) at {_call_site(1)}")
        return cfg

    def set_active(self, name: str, *, set_by: str | None = None) -> None:
        """Make ``name`` the process's backend (config loaders only): first wins, same again is a no-op."""
        set_by = set_by or f"set_active() at {_call_site(1)}"
        with self._lock:
            if self._active is None:
                self._active, self._active_set_by = name, set_by
            elif self._active != name:
                raise ActiveBackendConflictError(self._active, name, self._active_set_by, set_by)

    def reset_active(self) -> None:
        """Forget the active backend, so the next ``load_config`` may pick another (tests, notebooks)."""
        with self._lock:
            self._active = self._active_set_by = None

    def active_backend(self) -> str | None:
        """The active backend's name, or None."""
        return self._active

    def has_data_backend(self) -> bool:
        """Whether a config has set the active backend."""
        return self._active is not None

    def data_backend(self) -> BackendProxy:
        """The active backend's proxy; raises :class:`NoActiveBackendError` before any ``load_config``."""
        active = self._active
        if active is None:
            raise NoActiveBackendError()
        return self.backend_for(active)

    # --- plugins and snapshots ----------------------------------------------------------
    def _ensure_plugins(self) -> None:
        if self._plugins is not None or not self._discover:
            return
        with self._lock:
            if self._plugins is not None or self._discovering:
                return
            self._discovering = True
            try:
                self._plugins = load_plugins(self, self._group)
            finally:
                self._discovering = False

    def plugins(self) -> tuple[PluginInfo, ...]:
        """What plugin discovery found (running it now if it has not run)."""
        self._ensure_plugins()
        return self._plugins or ()

    def snapshot(self) -> RegistrySnapshot:
        """A frozen picture of every backend x verb, import failures, plugins and the active backend."""
        self._ensure_plugins()
        with self._lock:
            entries = dict(self._entries)
            failures = dict(self._failures)
            active, set_by, plugins = self._active, self._active_set_by, self._plugins
        backends = []
        for name, entry in entries.items():
            kind, target = _describe_target(entry.target)
            verbs = tuple(describe_verb(entry.target, v) for v in entry.verbs)
            backends.append(BackendInfo(name, kind, target, entry.origin, verbs))
        known = sorted(entries)
        errors = []
        for name, failure in failures.items():
            message = str(BackendImportError(name, failure.error, known, failure.install, failure.source))
            missing = getattr(failure.error, "name", None) if isinstance(failure.error, ImportError) else None
            errors.append(
                ImportFailure(
                    name,
                    type(failure.error).__name__,
                    str(failure.error),
                    message,
                    failure.install,
                    missing,
                    failure.source,
                    name in entries,
                )
            )
        return RegistrySnapshot(tuple(backends), tuple(errors), active, set_by, plugins or (), plugins is not None)

    # --- isolation (see isolated_registry and inspector._isolation) ----------------------------------------------
    def save_state(self) -> _State:
        with self._lock:
            return _State(
                dict(self._entries),
                dict(self._failures),
                self._active,
                self._active_set_by,
                self._plugins,
                self._discover,
            )

    def restore_state(self, state: _State) -> None:
        with self._lock:
            self._entries, self._failures = dict(state.entries), dict(state.failures)
            self._active, self._active_set_by = state.active, state.active_set_by
            self._plugins, self._discover = state.plugins, state.discover

    def _clear(self, *, discover_plugins: bool, keep_backends: bool) -> None:
        state = self.save_state()
        empty = replace(state, entries={}, failures={}, active=None, active_set_by=None, plugins=None)
        self.restore_state(replace(empty, discover=discover_plugins))
        if keep_backends:
            with self._lock:
                self._entries, self._failures = dict(state.entries), dict(state.failures)
