"""PyTorch's SDPA enable flags as one table: each backend's reader and setter.

``torch.nn.attention`` keeps one table from backend to the suffix of its ``torch._C`` switches
(``_get_<suffix>_sdp_enabled`` and ``_set_sdp_use_<suffix>``); this is the same table keyed by
the backend names of this family, so reading, setting and restoring the flags go through one
place. The flags are process-wide (``sdpa_kernel`` blocks change them for every thread).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from inspector.dispatch.torch_sdpa.names import CUDNN, EFFICIENT, FLASH, MATH, OVERRIDEABLE

SUFFIXES = {FLASH: "flash", EFFICIENT: "mem_efficient", CUDNN: "cudnn", MATH: "math", OVERRIDEABLE: "overrideable"}


def _off() -> bool:
    return False


def _ignore(_on: bool) -> None:
    return None


# A build without a switch (older torch without ``overrideable``) reads it as off and ignores a setting.
READERS: dict[str, Callable[[], bool]] = {
    name: getattr(torch._C, f"_get_{suffix}_sdp_enabled", _off) for name, suffix in SUFFIXES.items()
}
SETTERS: dict[str, Callable[[bool], None]] = {
    name: getattr(torch._C, f"_set_sdp_use_{suffix}", _ignore) for name, suffix in SUFFIXES.items()
}
read_flash, read_math = READERS[FLASH], READERS[MATH]
# (flash, math) -> the enabled set, built once: the CPU hot path allocates nothing.
CPU_ENABLED = {
    (f, m): frozenset(name for name, on in ((FLASH, f), (MATH, m)) if on) for f in (False, True) for m in (False, True)
}


def current_flags() -> dict[str, bool]:
    """PyTorch's SDPA enable flags now, by backend name."""
    return {name: bool(read()) for name, read in READERS.items()}


def restore_flags(flags: Mapping[str, bool]) -> None:
    """Set each named backend's flag (as ``current_flags`` returned them)."""
    for name, on in flags.items():
        SETTERS[name](bool(on))


def allow_only(names: frozenset[str] | set[str]) -> None:
    """Enable exactly ``names`` (what ``sdpa_kernel([...])`` does, without its context manager)."""
    restore_flags({name: name in names for name in SUFFIXES})


def enabled_backends(device: str) -> frozenset[str]:
    """The backends the flags allow now; on CPU only flash and math exist."""
    if device == "cpu":
        return CPU_ENABLED[(bool(read_flash()), bool(read_math()))]
    return frozenset(name for name, read in READERS.items() if read())
