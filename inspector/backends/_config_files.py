"""Reading a config source (a YAML, TOML or JSON file, or a mapping) into a plain mapping.

A file is opened without blocking and must be a regular file of UTF-8 text no larger than
``MAX_CONFIG_BYTES``: a directory, a FIFO or a device is refused before anything is read.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from inspector.backends._errors import ConfigError, ConfigNotFoundError, ConfigTypeError

MAX_CONFIG_BYTES = 16 * 1024 * 1024


class _MissingParser(Exception):
    """The library that reads this format is not installed (the message says how to install it)."""


def _yaml(text: str) -> Any:
    try:
        import yaml
    except ImportError as exc:
        raise _MissingParser(
            "reading YAML needs PyYAML, which is not installed. Install it with: pip install pyyaml "
            "(or write the config as .toml or .json)"
        ) from exc
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


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: Path) -> bytes:
    """The bytes of the regular file ``path``; anything else is a :class:`ConfigError`, and nothing blocks."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConfigNotFoundError(
            f"No config file at {where} (looked in {Path(path).absolute().parent}); check the path.",
            source=where,
        ) from None
    except OSError as exc:
        raise ConfigError(f"Cannot open {where}: {exc.strerror or exc}.", source=where) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"{where} is {_kind(info.st_mode)}, not a config file; give the path of a .yaml, .toml or .json file.",
                source=where,
            )
        if info.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{where} is {info.st_size:,} bytes; a config may have at most {MAX_CONFIG_BYTES:,}. Keep large "
                "data in a file the backend reads (data.path).",
                source=where,
            )
        chunks, size = [], 0
        while size <= MAX_CONFIG_BYTES and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ConfigError(f"Cannot read {where}: {exc.strerror or exc}.", source=where) from exc
    finally:
        os.close(fd)
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where} grew past {MAX_CONFIG_BYTES:,} bytes while being read.", source=where)
    return b"".join(chunks)


def decode(data: bytes, path: Path) -> str:
    """UTF-8 text (a leading byte-order mark is dropped); other encodings are a :class:`ConfigError`."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path.name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8.",
            source=str(path),
        ) from None


def read_config(source: Any) -> Mapping[Any, Any]:
    """The raw mapping behind ``source``; a bad file (missing, not a file, not UTF-8, bad syntax) is a
    :class:`ConfigError` naming it."""
    if isinstance(source, Mapping):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigTypeError(
            f"load_config() takes a path to a .yaml/.toml/.json file or a mapping; got {type(source).__name__}."
        )
    path = Path(source)
    data = read_bytes(path)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise ConfigError(
            f"Cannot tell the format of {path.name!r} from its suffix.",
            value=path.suffix,
            known=sorted(READERS),
            source=str(path),
        )
    text = decode(data, path)
    try:
        loaded = reader(text)
    except _MissingParser as exc:
        raise ConfigError(f"Cannot read {path.name}: {exc}.", source=str(path)) from exc.__cause__
    except Exception as exc:  # each format has its own error type; all mean "fix the file"
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"Cannot parse {path.name}: {first_line}", source=str(path)) from exc
    if not isinstance(loaded, Mapping):
        raise ConfigError(
            f"{path.name} must hold a mapping at the top level; got {type(loaded).__name__}.",
            source=str(path),
        )
    return loaded
