"""Frozen records of a registry's state, for the inspector: backends x verbs, failures, plugins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from inspector.backends._errors import UnknownBackendError, UnknownVerbError
from inspector.backends._verbs import BUILD, VerbInfo

if TYPE_CHECKING:
    from inspector.backends._plugins import PluginInfo


@dataclass(frozen=True)
class BackendInfo:
    """A registered backend: its kind (``module``, ``object``, ``class``, ``legacy``), origin and verbs."""

    name: str
    kind: str
    target: str
    origin: str
    verbs: tuple[VerbInfo, ...]

    @property
    def verb_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.verbs)

    def supports(self, op: str) -> bool:
        return op in self.verb_names

    def verb(self, op: str) -> VerbInfo:
        for info in self.verbs:
            if info.name == op:
                return info
        raise UnknownVerbError(f"Backend {self.name!r} has no verb {op!r}. Verbs: {list(self.verb_names)}")


@dataclass(frozen=True)
class ImportFailure:
    """A backend that could not be imported, with the message ``backend_for`` would raise.

    ``shadowed`` is True when a later registration under the same name won.
    """

    name: str
    error_type: str
    error: str
    message: str
    install: str | None
    missing_module: str | None
    source: str | None
    shadowed: bool


@dataclass(frozen=True)
class RegistrySnapshot:
    """Everything the registry knows at one moment; ``backends`` in registration order."""

    backends: tuple[BackendInfo, ...]
    import_errors: tuple[ImportFailure, ...]
    active: str | None
    active_set_by: str | None
    plugins: tuple[PluginInfo, ...]
    plugins_discovered: bool

    @property
    def names(self) -> tuple[str, ...]:
        """Registered backends, sorted (like ``available_backends()``)."""
        return tuple(sorted(b.name for b in self.backends))

    @property
    def failed(self) -> tuple[ImportFailure, ...]:
        """Import failures not shadowed by a registration: the names ``backend_for`` refuses."""
        return tuple(f for f in self.import_errors if not f.shadowed)

    @property
    def verbs(self) -> tuple[str, ...]:
        """Every verb any backend publishes: ``build`` first, the rest sorted."""
        others = {v.name for b in self.backends for v in b.verbs} - {BUILD}
        return (BUILD, *sorted(others))

    def backend(self, name: str) -> BackendInfo:
        for info in self.backends:
            if info.name == name:
                return info
        raise UnknownBackendError(name, list(self.names))

    def __repr__(self) -> str:
        failed = f", {len(self.failed)} failed to import" if self.failed else ""
        return f"<RegistrySnapshot: {len(self.backends)} backends {list(self.names)}{failed}; active={self.active!r}>"

    def _repr_html_(self) -> str:
        """The backend × verb matrix as a plain table (no pandas): ✓ where a backend publishes a verb."""
        from inspector._display import html_table

        verbs = self.verbs
        rows: list[tuple[str, ...]] = []
        for info in sorted(self.backends, key=lambda b: b.name):
            mark = " (active)" if info.name == self.active else ""
            rows.append((info.name + mark, *("✓" if info.supports(v) else "" for v in verbs)))
        for failure in self.failed:
            install = f" — {failure.install}" if failure.install else ""
            rows.append((failure.name, f"✗ {failure.error_type}: {failure.error}{install}"))  # spans every verb
        return html_table(("backend", *verbs), rows, css_class="inspector-registry", row_headers=True)
