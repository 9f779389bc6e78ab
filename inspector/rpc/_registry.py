"""The RPC backend registry: named handler pairs that build options and start an agent.

NOTE [ Stable backend members ]
torch makes ``BackendType`` an ``Enum`` and rebuild it on every
``register_backend``, so a member obtained earlier (``rpc.BackendType.TENSORPIPE``, or
``init_rpc``'s default) is no longer a member of the new class and gets rejected; a handler
pair equal to an existing one even collapses into an alias and is lost on the next rebuild.
Here ``BackendType`` is one class for the life of the process: members are its instances,
kept in an ordered table that registration only appends to. ``BackendType.X``,
``BackendType["X"]``, iteration, ``len`` and ``__members__`` read the table, and every verb
calls the handlers a member carries, so a member keeps working wherever it was obtained,
even after ``scoped_backends`` has dropped it from the table again.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from inspector._isolation import restoring
from inspector._messages import Message
from inspector.rpc._errors import RpcError
from inspector.rpc._tensorpipe import construct_tensorpipe_options, init_tensorpipe_backend

BackendValue = collections.namedtuple("BackendValue", ["construct_rpc_backend_options_handler", "init_backend_handler"])

DEFAULT_RPC_TIMEOUT_SEC = 60.0
DEFAULT_INIT_METHOD = "env://"


class UnknownRpcBackendError(RpcError, KeyError, ValueError):
    """A backend name that is not registered; ``.known`` lists the registered ones."""

    def __init__(self, name: object, known: list[str]) -> None:
        self.name = name
        self.known = known
        step = "register it with inspector.rpc.register_backend(name, construct, init)"
        super().__init__(Message(f"Unknown RPC backend {name!r}. Known: {known}", next_step=step))

    def __str__(self) -> str:
        return str(self.args[0])


class DuplicateBackendError(RpcError, RuntimeError):
    """``register_backend`` for a name already taken (torch's wording, then what is registered)."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        step = f"use BackendType[{name!r}], or register under another name"
        super().__init__(Message(f"RPC backend {name}: already registered", {"registered": known}, next_step=step))


class UnknownBackendOptionError(RpcError, TypeError):
    """An option the backend's options handler does not take (torch drops such options silently)."""

    def __init__(self, backend: str, unknown: list[str], accepted: list[str]) -> None:
        self.backend = backend
        self.unknown = unknown
        self.accepted = accepted
        super().__init__(f"RPC backend {backend} does not take the option(s) {unknown}.\naccepted = {accepted}")


class _BackendTypeMeta(type):
    """Class-level reads of the member table (see NOTE [ Stable backend members ])."""

    _table: dict[str, BackendType]

    def __iter__(cls) -> Iterator[BackendType]:
        return iter(tuple(cls._table.values()))

    def __len__(cls) -> int:
        return len(cls._table)

    def __contains__(cls, item: object) -> bool:
        return item in cls._table.values() or (isinstance(item, str) and item in cls._table)

    def __getitem__(cls, name: str) -> BackendType:
        try:
            return cls._table[name]
        except KeyError:
            raise UnknownRpcBackendError(name, list(cls._table)) from None

    def __getattr__(cls, name: str) -> BackendType:
        table = cls.__dict__.get("_table", {})
        if name in table:
            return table[name]
        raise AttributeError(f"BackendType has no member {name!r}. Known: {list(table)}")

    @property
    def __members__(cls) -> Mapping[str, BackendType]:
        return types.MappingProxyType(dict(cls._table))

    def __repr__(cls) -> str:
        return "<enum 'BackendType'>"


class BackendType(metaclass=_BackendTypeMeta):
    """The registered RPC backends; ``BackendType.TENSORPIPE`` is built in."""

    TENSORPIPE: ClassVar[BackendType]
    _table: ClassVar[dict[str, BackendType]] = {}
    __slots__ = ("name", "value")
    name: str
    value: BackendValue

    def __init__(self, name: str, value: BackendValue) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("BackendType members are read-only")

    def __repr__(self) -> str:
        return "BackendType." + self.name

    def __reduce__(self) -> tuple[Any, ...]:
        return (_member_named, (self.name,))

    @classmethod
    def save_state(cls) -> dict[str, BackendType]:
        """The registered backends, for ``inspector._isolation.restoring`` (``scoped_backends``)."""
        return dict(cls._table)

    @classmethod
    def restore_state(cls, state: dict[str, BackendType]) -> None:
        cls._table.clear()
        cls._table.update(state)


def _member_named(name: str) -> BackendType:
    return BackendType[name]


def backend_registered(backend_name: str) -> bool:
    """Whether a backend of that name is registered."""
    return backend_name in BackendType._table


def register_backend(
    backend_name: str,
    construct_rpc_backend_options_handler: Callable[..., Any],
    init_backend_handler: Callable[..., Any],
) -> BackendType:
    """Register a backend and return its member; a taken name raises ``DuplicateBackendError``."""
    if not isinstance(backend_name, str) or not backend_name:
        raise TypeError(f"A backend name must be a non-empty str, got {backend_name!r}")
    if backend_registered(backend_name):
        raise DuplicateBackendError(backend_name, list(BackendType._table))
    member = BackendType(backend_name, BackendValue(construct_rpc_backend_options_handler, init_backend_handler))
    BackendType._table[backend_name] = member
    return member


def resolve_backend(backend: object) -> BackendType:
    """Our member for ``backend``: a member, its name, or a member of torch's own ``BackendType``."""
    if isinstance(backend, BackendType):
        return backend
    if isinstance(backend, str):
        return BackendType[backend]
    value = getattr(backend, "value", None)
    name = getattr(backend, "name", None)
    if isinstance(name, str) and hasattr(value, "construct_rpc_backend_options_handler"):
        # A torch BackendType member: ours when registered here too, else torch's handlers.
        if backend_registered(name):
            return BackendType[name]
        return BackendType(name, BackendValue(*value))  # type: ignore[misc]
    raise TypeError(
        f"A backend must be a BackendType member or its name, got {type(backend).__name__}.\n"
        f"registered = {list(BackendType._table)}"
    )


def _check_options(member: BackendType, kwargs: Mapping[str, Any]) -> None:
    handler = member.value.construct_rpc_backend_options_handler
    try:
        parameters = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: let it decide
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = [p.name for p in parameters[2:] if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = [key for key in kwargs if key not in accepted]
    if unknown:
        raise UnknownBackendOptionError(member.name, unknown, accepted)


def construct_rpc_backend_options(
    backend: object,
    rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC,
    init_method: str = DEFAULT_INIT_METHOD,
    **kwargs: Any,
) -> Any:
    """The backend's options object, built by its handler; unknown options raise, never vanish."""
    member = resolve_backend(backend)
    _check_options(member, kwargs)
    return member.value.construct_rpc_backend_options_handler(rpc_timeout, init_method, **kwargs)


def init_backend(backend: object, *args: Any, **kwargs: Any) -> Any:
    """Start the backend's agent through its init handler (arguments as torch passes them)."""
    return resolve_backend(backend).value.init_backend_handler(*args, **kwargs)


@dataclass(frozen=True)
class BackendInfo:
    """A registered backend as a row: which registry, its name and its two handlers."""

    registry: str
    name: str
    construct_handler: str
    init_handler: str


def _qualname(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def registered_backends(include_torch: bool = True) -> tuple[BackendInfo, ...]:
    """Ours in registration order, then torch's own ``BackendType`` members (imports torch's RPC)."""
    rows = [BackendInfo("inspector", m.name, _qualname(m.value[0]), _qualname(m.value[1])) for m in BackendType]
    if include_torch:
        from torch.distributed.rpc import backend_registry

        for member in backend_registry.BackendType:
            value = member.value
            rows.append(BackendInfo("torch", member.name, _qualname(value[0]), _qualname(value[1])))
    return tuple(rows)


register_backend("TENSORPIPE", construct_tensorpipe_options, init_tensorpipe_backend)


@contextlib.contextmanager
def scoped_backends() -> Iterator[None]:
    """Undo every registration made inside the block (for tests and notebooks)."""
    with restoring(BackendType):
        yield
