"""The registry's failure shapes: each names the next step and carries the offending values.

Every class subclasses the builtin a caller would otherwise catch (``KeyError``,
``RuntimeError``, ``NotImplementedError``, ``ValueError``) and keeps its facts as attributes,
so a panel can render them and a test can assert them without parsing the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _lines(headline: str, facts: Sequence[tuple[str, object]]) -> str:
    """A headline, then one ``key = value`` line per fact that has a value."""
    rest = [f"{key} = {value}" for key, value in facts if value not in (None, "", ())]
    return "\n".join([headline, *rest])


def _did_you_mean(suggestions: Sequence[str]) -> str:
    if not suggestions:
        return ""
    return " Did you mean " + " or ".join(repr(s) for s in suggestions) + "?"


class UnknownBackendError(KeyError):
    """No backend was registered (or recorded as failing) under ``name``."""

    def __init__(self, name: str, known: Sequence[str], suggestions: Sequence[str] = ()) -> None:
        self.name = name
        self.known = list(known)
        self.suggestions = tuple(suggestions)
        super().__init__(f"Unknown backend {name!r}. Known: {self.known}.{_did_you_mean(self.suggestions)}")

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name, self.known, self.suggestions))


class BackendImportError(RuntimeError):
    """The backend is known, but importing it failed; raised ``from`` the original error."""

    def __init__(
        self,
        backend_name: str,
        error: BaseException,
        known: Sequence[str],
        install: str | None = None,
        source: str | None = None,
    ) -> None:
        self.backend_name = backend_name
        self.error = error
        self.known = list(known)
        self.install = install
        self.source = source
        self.missing_module = getattr(error, "name", None) if isinstance(error, ImportError) else None
        headline = (
            f"Backend {backend_name!r} failed to import: {error}. "
            f"Install its dependency or switch to one of {self.known}."
        )
        facts = [("install", install), ("missing_module", self.missing_module), ("source", source)]
        super().__init__(_lines(headline, facts))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.backend_name, self.error, self.known, self.install, self.source))


class MissingOperationError(NotImplementedError):
    """The backend exists but does not publish the verb ``op_name``.

    ``supported_by`` lists the registered backends that do (in registration order); when none
    does, ``suggestions`` holds close spellings of verbs that exist somewhere.
    """

    def __init__(
        self,
        backend_name: str,
        op_name: str,
        supported_by: Sequence[str] = (),
        suggestions: Sequence[str] = (),
    ) -> None:
        self.backend_name = backend_name
        self.op_name = op_name
        self.supported_by = list(supported_by)
        self.suggestions = tuple(suggestions)
        if self.supported_by:
            hint = f"Supported by: {self.supported_by}."
        else:
            hint = (
                f"No registered backend implements {op_name!r} — check the spelling or add it to "
                f"the backend module.{_did_you_mean(self.suggestions)}"
            )
        super().__init__(f"Backend {backend_name!r} does not implement {op_name!r}. {hint}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.backend_name, self.op_name, self.supported_by, self.suggestions))


class NoActiveBackendError(RuntimeError):
    """Nothing has set the process-wide active backend yet."""

    def __init__(self) -> None:
        super().__init__(
            "No active data backend. Load a TrainConfig via inspector.backends.load_config() before "
            "accessing backend verbs. Direct TrainConfig() construction does not register a backend."
        )


class ActiveBackendConflictError(RuntimeError):
    """A second config tried to make a different backend the active one."""

    def __init__(self, current: str, requested: str, set_by: str | None, requested_by: str | None) -> None:
        self.current = current
        self.requested = requested
        self.set_by = set_by
        self.requested_by = requested_by
        headline = (
            f"Active backend already set to {current!r}, refusing to overwrite with {requested!r}. "
            "One process trains on one backend: two configs with different dataset_type were loaded. "
            "Tests and notebooks switch with reset_active_backend() or isolated_registry()."
        )
        super().__init__(_lines(headline, [("set_by", set_by), ("requested_by", requested_by)]))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.current, self.requested, self.set_by, self.requested_by))


class ConfigError(ValueError):
    """A config is malformed: ``key`` is the dotted path of the problem, ``known`` what is allowed."""

    def __init__(
        self,
        message: str,
        *,
        key: str | None = None,
        value: Any = None,
        known: Sequence[str] = (),
        source: str | None = None,
    ) -> None:
        self.message = message
        self.key = key
        self.value = value
        self.known = list(known)
        self.source = source
        facts: list[tuple[str, object]] = [("key", key), ("source", source)]
        if self.known:
            facts.append(("known", self.known))
        super().__init__(_lines(message, facts))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_config_error, (self.message, self.key, self.value, self.known, self.source))


def _rebuild_config_error(
    message: str, key: str | None, value: Any, known: Sequence[str], source: str | None
) -> ConfigError:
    return ConfigError(message, key=key, value=value, known=known, source=source)
