"""Reading a config source (YAML or TOML file, or a mapping) into a plain mapping."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from inspector.backends._errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def _yaml(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _toml(text: str) -> Any:
    return tomllib.loads(text)


READERS: dict[str, Callable[[str], Any]] = {
    ".yaml": _yaml,
    ".yml": _yaml,
    ".toml": _toml,
    ".json": json.loads,
}


def describe_source(source: Any) -> str:
    """How a config source is named in messages: its path, or ``<mapping>``."""
    if isinstance(source, (str, os.PathLike)):
        return str(os.fspath(source))
    return "<mapping>"


def read_config(source: Any) -> Mapping[Any, Any]:
    """The raw mapping behind ``source``; a file's syntax error is a :class:`ConfigError`."""
    if isinstance(source, Mapping):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"load_config() takes a path to a .yaml/.toml/.json file or a mapping; got {type(source).__name__}."
        )
    path = Path(source)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise ConfigError(
            f"Cannot tell the format of {path.name!r} from its suffix.",
            value=path.suffix,
            known=sorted(READERS),
            source=str(path),
        )
    text = path.read_text(encoding="utf-8")
    try:
        loaded = reader(text)
    except Exception as exc:  # each format has its own error type; all mean "fix the file"
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"Cannot parse {path.name}: {first_line}", source=str(path)) from exc
    if not isinstance(loaded, Mapping):
        raise ConfigError(
            f"{path.name} must hold a mapping at the top level; got {type(loaded).__name__}.",
            source=str(path),
        )
    return loaded
