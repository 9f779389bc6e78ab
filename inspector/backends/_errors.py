"""The registry's failure shapes: each names the next step and carries the offending values.

Every class subclasses :class:`BackendError` (so ``except BackendError`` catches anything this
part raises on purpose) and the builtin a caller would otherwise catch (``KeyError``,
``RuntimeError``, ``NotImplementedError``, ``ValueError``, ``TypeError``), and keeps its facts as
attributes, so a panel can render them and a test can assert them without parsing the message
(the text is a ``Message``: NOTE [ Messages ] in ``inspector._messages``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspector._messages import Message
from inspector.errors import InspectorError


def describe_error(error: BaseException) -> str:
    """An import error as its message; anything else (``SystemExit``, ``TypeError``) with its type."""
    text = str(error)
    if isinstance(error, ImportError) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _did_you_mean(suggestions: Sequence[str]) -> str:
    if not suggestions:
        return ""
    return " Did you mean " + " or ".join(repr(s) for s in suggestions) + "?"


class BackendError(InspectorError):
    """The root of every error ``inspector.backends`` raises."""


class InvalidBackendError(BackendError, TypeError):
    """Something offered as a backend cannot be one: no ``build``, a bad ``__verbs__``, a class as a plugin."""


class InvalidBackendNameError(BackendError, ValueError):
    """A backend name that is not a non-empty string."""


class BuildContextError(BackendError, ValueError):
    """A ``BuildContext`` whose rank or world size is impossible."""


class UnknownVerbError(BackendError, KeyError):
    """A snapshot was asked for a verb its backend does not publish."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0])


class UnknownBackendError(BackendError, KeyError):
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


class BackendImportError(BackendError, RuntimeError):
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
            f"Backend {backend_name!r} failed to import: {describe_error(error)}. "
            f"Install its dependency or switch to one of {self.known}."
        )
        facts = [("install", install), ("missing_module", self.missing_module), ("source", source)]
        super().__init__(Message(headline, facts))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.backend_name, self.error, self.known, self.install, self.source))


class MissingOperationError(BackendError, NotImplementedError):
    """The backend exists but does not publish the verb ``op_name``.

    ``supported_by`` lists the registered backends that do (in registration order); when none
    does, ``suggestions`` holds close spellings of verbs that exist somewhere. ``not_a_verb``
    says why, when the backend has an attribute of that name that is not one of its verbs, and
    ``declare`` is then the ``__verbs__`` tuple that would publish it (None if it cannot be a verb).
    """

    def __init__(
        self,
        backend_name: str,
        op_name: str,
        supported_by: Sequence[str] = (),
        suggestions: Sequence[str] = (),
        not_a_verb: str | None = None,
        declare: Sequence[str] | None = None,
    ) -> None:
        self.backend_name = backend_name
        self.op_name = op_name
        self.supported_by = list(supported_by)
        self.suggestions = tuple(suggestions)
        self.not_a_verb = not_a_verb
        self.declare = tuple(declare) if declare is not None else None
        if not_a_verb is not None:
            headline = f"Backend {backend_name!r} has an attribute {op_name!r}, but it is not a verb: {not_a_verb}."
            if self.declare is not None:
                step = (
                    "To publish it, list it in the backend's verbs and register it again: "
                    f"__verbs__ = {self.declare!r}."
                )
            else:
                step = "Only callables can be verbs: define a function of that name in the backend."
            others = f" Supported by: {self.supported_by}." if self.supported_by else ""
            message = f"{headline} {step}{others}"
        elif self.supported_by:
            message = f"Backend {backend_name!r} does not implement {op_name!r}. Supported by: {self.supported_by}."
        else:
            message = (
                f"Backend {backend_name!r} does not implement {op_name!r}. No registered backend implements "
                f"{op_name!r} — check the spelling or add it to the backend module.{_did_you_mean(self.suggestions)}"
            )
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        args = (self.backend_name, self.op_name, self.supported_by, self.suggestions, self.not_a_verb, self.declare)
        return (type(self), args)


class NoActiveBackendError(BackendError, RuntimeError):
    """Nothing has set the process-wide active backend yet."""

    def __init__(self) -> None:
        super().__init__(
            "No active data backend. Load a TrainConfig via inspector.backends.load_config() before "
            "accessing backend verbs. Direct TrainConfig() construction does not register a backend."
        )


class ActiveBackendConflictError(BackendError, RuntimeError):
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
        super().__init__(Message(headline, [("set_by", set_by), ("requested_by", requested_by)]))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.current, self.requested, self.set_by, self.requested_by))


class ConfigError(BackendError, ValueError):
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
        super().__init__(Message(message, facts))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_config_error, (type(self), self.message, self.key, self.value, self.known, self.source))


class ConfigNotFoundError(ConfigError, FileNotFoundError):
    """The config file does not exist (also a ``FileNotFoundError``)."""


class ConfigTypeError(BackendError, TypeError):
    """A config used the wrong way: a raw dict where a typed config is needed, a change to a frozen one."""


def _rebuild_config_error(
    cls: type[ConfigError], message: str, key: str | None, value: Any, known: Sequence[str], source: str | None
) -> ConfigError:
    return cls(message, key=key, value=value, known=known, source=source)
