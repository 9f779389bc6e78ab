"""Backend-specific options (``data.options``): defaults, unknown names and type checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inspector.backends import ConfigError, TrainConfig


def read_options(cfg: TrainConfig, defaults: Mapping[str, Any], backend: str) -> dict[str, Any]:
    """``defaults`` overridden by ``cfg.data.options``; an option the backend lacks is a ConfigError."""
    given = dict(cfg.data.options)
    for name in given:
        if name not in defaults:
            raise ConfigError(
                f"The {backend} backend has no option {name!r}.",
                key=f"data.options.{name}",
                value=given[name],
                known=sorted(defaults),
            )
    return {**defaults, **given}


def positive_int(options: Mapping[str, Any], name: str) -> int:
    value = options[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"data.options.{name} must be an int >= 1; got {value!r}.", key=f"data.options.{name}")
    return value


def shape_map(options: Mapping[str, Any], name: str) -> dict[str, tuple[int, ...]]:
    """A mapping of field name to shape (a list of non-negative ints; ``[]`` is a scalar per step)."""
    value = options[name]
    key = f"data.options.{name}"
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"{key} must map field names to shapes, e.g. {{action: [2]}}; got {value!r}.", key=key)
    shapes: dict[str, tuple[int, ...]] = {}
    for field, shape in value.items():
        dims = list(shape) if isinstance(shape, (list, tuple)) else None
        if (
            not isinstance(field, str)
            or dims is None
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in dims)
        ):
            raise ConfigError(
                f"{key}.{field} must be a list of non-negative ints; got {shape!r}.", key=f"{key}.{field}"
            )
        shapes[field] = tuple(dims)
    return shapes
