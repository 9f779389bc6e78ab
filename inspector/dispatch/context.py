"""The axes a dispatch decision may depend on, captured once per call."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

EMPTY: Mapping[str, Any] = MappingProxyType({})


def format_value(value: Any) -> str:
    """Short, stable text for an axis value (``torch.float16`` reads as ``float16``)."""
    text = str(value)
    return text[6:] if text.startswith("torch.") else text


class CallContext(NamedTuple):
    """Immutable snapshot of one call: standard axes, family-specific ``extra`` and the raw call.

    ``causal`` is an implicit causal mask (``is_causal=True``), distinct from ``has_mask`` (an
    explicit mask tensor): kernels often accept one and not the other.

    A named tuple rather than a frozen dataclass because contexts are built on the hot path
    and tuple construction is about three times cheaper. ``raw``/``raw_kwargs`` keep the
    original arguments so an unregistered implementation can probe them (``supports_call``).
    """

    family: str
    fwd: str | None = None
    dtype: Any = None
    device_cuda: bool = False
    ndim: int | None = None
    head_dim: int | None = None
    has_cache: bool = False
    has_mask: bool = False
    grad_enabled: bool = True
    causal: bool = False
    extra: Mapping[str, Any] = EMPTY
    raw: tuple[Any, ...] = ()
    raw_kwargs: Mapping[str, Any] = EMPTY

    def evolve(self, **changes: Any) -> CallContext:
        """A copy with some axes changed; unknown names raise ``TypeError`` listing the axes."""
        unknown = sorted(set(changes) - set(self._fields))
        if unknown:
            raise TypeError(
                f"CallContext has no axis {unknown[0]!r}. Axes: {list(self._fields)}; "
                "put family-specific axes in extra={...}"
            )
        if "extra" in changes:
            changes["extra"] = MappingProxyType(dict(changes["extra"]))
        return self._replace(**changes)

    def value_of(self, axis: str) -> Any:
        """Read a standard axis or, failing that, an ``extra`` axis (``None`` when absent)."""
        if axis in self._fields:
            return getattr(self, axis)
        return self.extra.get(axis)

    def describe(self) -> str:
        """One line: ``fwd=None dtype=float32 ndim=4 head_dim=64 cache=False mask=False grad=True``."""
        parts = [f"fwd={self.fwd}", f"dtype={format_value(self.dtype)}"]
        if self.device_cuda:
            parts.append("cuda=True")
        if self.ndim is not None:
            parts.append(f"ndim={self.ndim}")
        if self.head_dim is not None:
            parts.append(f"head_dim={self.head_dim}")
        parts += [f"cache={self.has_cache}", f"mask={self.has_mask}"]
        if self.causal:
            parts.append("causal=True")
        parts.append(f"grad={self.grad_enabled}")
        parts += [f"{key}={format_value(value)}" for key, value in sorted(self.extra.items())]
        return " ".join(parts)

    def without_raw(self) -> CallContext:
        """The same axes without the call's arguments (safe to keep: holds no tensors)."""
        if not self.raw and not self.raw_kwargs:
            return self
        return self._replace(raw=(), raw_kwargs=EMPTY)


def parse_extra(text: str) -> dict[str, Any]:
    """``"kv_len=2048, window=none"`` -> ``{"kv_len": 2048, "window": None}`` (ints, floats, bools, None).

    How the panel and the command line read family-specific axes; anything else stays a string.
    """
    extra: dict[str, Any] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"Extra axes are written name=value, separated by commas; cannot read {item.strip()!r}")
        extra[key] = _literal(raw)
    return extra


def _literal(raw: str) -> Any:
    lowered = raw.lower()
    if lowered in ("none", ""):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


AXES: tuple[str, ...] = tuple(f for f in CallContext._fields if f not in ("family", "extra", "raw", "raw_kwargs"))
