"""Which attributes of a backend are its verbs (operations a consumer may call).

NOTE [ Declared verbs ]
The seed treated every attribute of a backend module as an operation, so a submodule
(``backend.utils``), an attribute set to ``None`` or an imported helper answered
``supports(...) == True``. Here a backend's verbs are fixed when it is registered:

- a ``__verbs__`` tuple of names, if the backend has one, is the whole list (each must name a
  callable attribute), plus ``build``, which every backend has;
- otherwise, its public (no leading underscore) callable attributes that are neither modules
  nor classes; for a module, only callables defined in that module or beneath it count, so
  ``from typing import cast`` does not publish ``cast``.

The proxy forwards only these names and the snapshot lists only these names, so what the
inspector shows and what ``supports`` answers are one list. ``supports`` itself is the proxy's
own method, so it can never be a verb.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

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


def _is_default_verb(backend: Any, name: str) -> bool:
    if name.startswith("_") or name in RESERVED:
        return False
    try:
        value = getattr(backend, name)
    except Exception:  # a property that raises is not a verb
        return False
    if value is None or not callable(value) or inspect.ismodule(value) or inspect.isclass(value):
        return False
    return not isinstance(backend, ModuleType) or _defined_under(value, backend)


def _explicit_verbs(backend: Any, declared: Any) -> list[str]:
    if isinstance(declared, str) or not isinstance(declared, Iterable):
        raise TypeError(f"__verbs__ of {backend!r} must be a tuple of names; got {declared!r}.")
    names = list(dict.fromkeys(declared))
    bad = [n for n in names if not isinstance(n, str) or n in RESERVED or not callable(getattr(backend, n, None))]
    if bad:
        raise TypeError(
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
