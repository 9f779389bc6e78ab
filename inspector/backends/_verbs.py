"""Which attributes of a backend are its verbs (operations a consumer may call).

NOTE [ Declared verbs ]
Treating every attribute of a backend module as an operation would make a submodule
(``backend.utils``), an attribute set to ``None`` or an imported helper answer
``supports(...) == True``. Instead, a backend's verbs are fixed when it is registered:

- a ``__verbs__`` tuple of names, if the backend has one, is the whole list (each must name a
  callable attribute), plus ``build``, which every backend has;
- otherwise, its public (no leading underscore) callable attributes that are neither modules
  nor classes. For a module, a callable counts when it is defined in that module or beneath
  it, or imported from a public module of the same project (the same top-level package, or
  another top-level package of the same installed distribution): ``from .common import stats``
  publishes ``stats``. Callables from other distributions (``from typing import cast``) and
  helpers from private modules (``from ._pipeline import shard``) do not count.

The proxy forwards only these names and the snapshot lists only these names, so what the
inspector shows and what ``supports`` answers are one list. ``supports`` itself is the proxy's
own method, so it can never be a verb. When code asks for an attribute that exists but is not
a verb, :func:`why_not_verb` says why, and the error shows the ``__verbs__`` that would publish it.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from types import ModuleType
from typing import Any

from inspector.backends._errors import InvalidBackendError

BUILD = "build"
RESERVED = frozenset({"supports"})  # the proxy's own method; a verb of that name could not be reached


@dataclass(frozen=True)
class VerbInfo:
    """One verb as the inspector shows it: its call signature and documentation."""

    name: str
    signature: str
    summary: str
    doc: str
    defined_in: str
    required: tuple[str, ...] = ()

    def call(self, receiver: str) -> str:
        """How code calls it with its required arguments: ``backend_for('npz').describe(cfg)``."""
        return f"{receiver}.{self.name}({', '.join(self.required)})"


def _defined_under(value: Any, module: ModuleType) -> bool:
    origin = getattr(value, "__module__", None)
    name = module.__name__
    return isinstance(origin, str) and (origin == name or origin.startswith(name + "."))


@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    """Top-level package -> distributions, read once per process (it scans every installed one)."""
    return packages_distributions()


def _same_project(origin: str, module: ModuleType) -> bool:
    """Whether ``origin`` (a module name) belongs to the project that defines ``module``."""
    mine, theirs = module.__name__.split(".")[0], origin.split(".")[0]
    if mine == theirs:
        return True
    if theirs in sys.stdlib_module_names or mine in sys.stdlib_module_names:
        return False
    shared = set(_distributions().get(mine, ())) & set(_distributions().get(theirs, ()))
    return bool(shared)


def _foreign(value: Any, module: ModuleType) -> str | None:
    """Why a callable found on ``module`` is not the module's own, or None if it is."""
    if _defined_under(value, module):
        return None
    origin = getattr(value, "__module__", None)
    if not isinstance(origin, str):
        return "it names no module it comes from"
    if not _same_project(origin, module):
        return f"it is imported from {origin!r}, which is not part of the backend's project"
    if any(part.startswith("_") for part in origin.split(".")):
        return f"it is a helper imported from the private module {origin!r}"
    return None


def _reason_not_default_verb(backend: Any, name: str) -> str | None:
    """Why attribute ``name`` of ``backend`` is not one of its default verbs (None if it is one)."""
    if name.startswith("_"):
        return "private names are never verbs"
    if name in RESERVED:
        return "the name is reserved by the proxy"
    try:
        value = getattr(backend, name)
    except Exception as exc:  # a property that raises is not a verb
        return f"reading it raised {type(exc).__name__}"
    if value is None:
        return "it is None"
    if inspect.ismodule(value):
        return f"it is the module {value.__name__!r}"
    if inspect.isclass(value):
        return f"it is the class {value.__qualname__!r}"
    if not callable(value):
        return f"it is not callable (its type is {type(value).__name__})"
    return _foreign(value, backend) if isinstance(backend, ModuleType) else None


def _is_default_verb(backend: Any, name: str) -> bool:
    return _reason_not_default_verb(backend, name) is None


def why_not_verb(backend: Any, name: str, verbs: tuple[str, ...]) -> tuple[str, tuple[str, ...] | None] | None:
    """Why ``backend.<name>`` exists yet is not among ``verbs``: the reason and the ``__verbs__`` that
    would publish it (None when it cannot be a verb). None when the backend has no such attribute."""
    if name in verbs or name.startswith("_") or name in RESERVED:
        return None
    try:
        inspect.getattr_static(backend, name)
    except AttributeError:
        return None
    declared = getattr(backend, "__verbs__", None)
    if declared is not None:
        reason = f"the backend's __verbs__ {tuple(declared)!r} does not list it"
    else:
        reason = _reason_not_default_verb(backend, name) or "it was added after the backend was registered"
    value = getattr(backend, name, None)
    publishable = callable(value) and not inspect.ismodule(value)
    return reason, ((*verbs, name) if publishable else None)


def _explicit_verbs(backend: Any, declared: Any) -> list[str]:
    if isinstance(declared, str) or not isinstance(declared, Iterable):
        raise InvalidBackendError(f"__verbs__ of {backend!r} must be a tuple of names; got {declared!r}.")
    names = list(dict.fromkeys(declared))
    bad = [n for n in names if not isinstance(n, str) or n in RESERVED or not callable(getattr(backend, n, None))]
    if bad:
        raise InvalidBackendError(
            f"__verbs__ of {backend!r} names {bad}, which are not callable attributes of the backend. "
            f"List only functions the backend defines; {sorted(RESERVED)} is reserved by the proxy."
        )
    return names


def declared_verbs(backend: Any) -> tuple[str, ...]:
    """The backend's verbs, ``build`` first, the rest sorted (see NOTE [ Declared verbs ])."""
    declared = getattr(backend, "__verbs__", None)
    if declared is not None:
        names = _explicit_verbs(backend, declared)
    else:
        names = [n for n in dir(backend) if _is_default_verb(backend, n)]
    return (BUILD, *sorted(n for n in set(names) if n != BUILD))


class _Written(str):
    """An annotation kept as text (``from __future__ import annotations``), shown without quotes."""

    def __repr__(self) -> str:
        return str(self)


def _unquoted(annotation: Any) -> Any:
    return _Written(annotation) if isinstance(annotation, str) else annotation


def _signature(fn: Any) -> tuple[str, tuple[str, ...]]:
    """The signature as written in the source, e.g. ``(cfg: TrainConfig, ctx: BuildContext)``,
    and the names of its required positional parameters."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(...)", ()
    params = [p.replace(annotation=_unquoted(p.annotation)) for p in sig.parameters.values()]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = tuple(p.name for p in params if p.kind in positional and p.default is inspect.Parameter.empty)
    text = str(sig.replace(parameters=params, return_annotation=_unquoted(sig.return_annotation)))
    return text, required


def describe_verb(backend: Any, name: str) -> VerbInfo:
    """Signature and docstring of one verb, for display."""
    fn = getattr(backend, name, None)
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    origin = getattr(fn, "__module__", None) or type(backend).__module__
    qualname = getattr(fn, "__qualname__", name)
    signature, required = _signature(fn)
    return VerbInfo(name, signature, summary, doc, f"{origin}.{qualname}", required)
