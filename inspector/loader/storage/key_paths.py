"""Places inside a payload as key-path tuples (``('obs', 3)``), and how to write one as Python."""

from __future__ import annotations

from typing import Any

KeyPath = tuple[Any, ...]


def format_key_path(keys: KeyPath, root: str = "obj") -> str:
    """``obj['obs'][3]`` for the key path ``('obs', 3)``."""
    return root + "".join(f"[{key!r}]" for key in keys)
