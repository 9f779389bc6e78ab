"""The values of a config document: bounded in size, and plain (dicts and lists) where the inspector keeps them.

NOTE [ Config size ]
YAML anchors let a few hundred bytes describe a document of billions of nodes (the "billion
laughs": ``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``, ...). PyYAML builds it cheaply by
sharing objects, but anything that walks it (``repr``, ``dict(...)``, ``json.dumps``) expands
every reference. So a document is measured *as expanded* before it is used: the size of each
container is computed once (memoised by identity) and summed per reference, which costs time in
the number of distinct nodes, not in the expanded size. A document larger than
``MAX_CONFIG_NODES`` expanded nodes, nested deeper than ``MAX_CONFIG_DEPTH``, or containing
itself is a :class:`ConfigError`. The same check guards mappings built in Python and OmegaConf
``DictConfig`` objects, whose interpolations are resolved while measuring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

from inspector.backends._errors import ConfigError

MAX_CONFIG_NODES = 1_000_000
MAX_CONFIG_DEPTH = 100


def _unreadable(path: str, exc: Exception, source: str | None) -> ConfigError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ConfigError(f"Cannot read {path or 'the config'}: {first}", key=path or None, source=source)


_UNREADABLE = object()  # stands for a child that could not be read, when that is tolerated


def _read_children(value: Any, path: str, source: str | None, strict: bool = True) -> list[tuple[str, Any]] | None:
    """The (path, child) pairs of a container, or None for a leaf.

    Reading a child can fail (an OmegaConf ``???`` or an interpolation that cannot be
    resolved): that is a :class:`ConfigError` naming the child's path, or with ``strict=False``
    a placeholder leaf.
    """
    if isinstance(value, (str, bytes, bytearray)):
        return None
    if isinstance(value, Mapping):
        pairs = [(f"{path}.{key}" if path else str(key), key) for key in value]
    elif isinstance(value, (Sequence, Set)):
        try:
            return [(f"{path}[{i}]", item) for i, item in enumerate(value)]
        except Exception as exc:  # a ListConfig item that cannot be resolved
            if not strict:
                return None
            raise _unreadable(path, exc, source) from exc
    else:
        return None
    children = []
    for child_path, key in pairs:
        try:
            children.append((child_path, value[key]))
        except Exception as exc:
            if not strict:
                children.append((child_path, _UNREADABLE))
                continue
            raise _unreadable(child_path, exc, source) from exc
    return children


def check_size(
    document: Any, path: str = "", *, source: str | None = None, limit: int = MAX_CONFIG_NODES, strict: bool = True
) -> int:
    """The expanded number of nodes of ``document``; a :class:`ConfigError` past ``limit`` (NOTE [ Config size ]).

    With ``strict=False`` a value that cannot be read (an OmegaConf ``???`` or a broken
    interpolation in a section the inspector only passes through) counts as one node.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    keep_alive: list[Any] = []  # ids stay unique only while the objects live (DictConfig makes nodes on access)

    def measure(value: Any, path: str, depth: int) -> int:
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ConfigError(
                f"{path or 'The config'} contains itself (a YAML anchor used inside its own definition?).",
                key=path or None,
                source=source,
            )
        children = _read_children(value, path, source, strict)
        if children is None:
            return 1
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(f"{path} is nested deeper than {MAX_CONFIG_DEPTH} levels.", key=path, source=source)
        open_nodes.add(key)
        keep_alive.append(value)
        total = 1
        for child_path, child in children:
            total += measure(child, child_path, depth + 1)
            if total > limit:
                raise ConfigError(
                    f"{path or 'The config'} expands to more than {limit:,} values; YAML anchors and aliases "
                    "that repeat each other (an alias bomb) are refused. Write the values out, or keep large "
                    "data in a file the backend reads (data.path).",
                    key=path or None,
                    source=source,
                )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    return measure(document, path, 0)


def plain(value: Any, path: str = "", source: str | None = None) -> Any:
    """``value`` with every foreign container (a ``DictConfig``, a ``ListConfig``, a mapping proxy)
    turned into a dict or a list; plain dicts, lists and tuples whose contents are already plain
    come back as the same objects. Call it only on a document :func:`check_size` accepted."""
    children = _read_children(value, path, source)
    if children is None:
        return value
    old = [child for _, child in children]
    new = [plain(child, child_path, source) for child_path, child in children]
    unchanged = all(n is o for n, o in zip(new, old, strict=True))
    if isinstance(value, Mapping):
        if type(value) is dict and unchanged:
            return value
        return dict(zip(value, new, strict=True))
    if type(value) in (list, tuple, set, frozenset):
        return value if unchanged else type(value)(new)
    return new  # a ListConfig or any other sequence becomes a list
