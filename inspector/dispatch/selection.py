"""The process tier: ``INSPECTOR_OPS``, legacy per-family variables and ``set_op``.

The environment is read once, on the first decision that needs it, and again only on
``reload_env()``; resolution never touches ``os.environ``. The tier is soft: a name that is
unknown, unavailable or incapable warns once and the chain decides instead. Entries for
families registered later are kept and apply once the family exists.

A steered family (``torch_sdpa``, which mirrors PyTorch's own choice) takes no process-wide
selection and no profile: what it reports must be what the other library runs, and only the
library's own flags change that process-wide. ``set_op`` refuses it, saying what to use instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from types import MappingProxyType

from inspector.dispatch.notices import warn_once
from inspector.dispatch.registry import _FAMILIES, _family, is_steered

ENV_VAR = "INSPECTOR_OPS"
PROFILE = "profile"
PROFILES = ("reference",)


class _ProcessTier:
    """Holder read by ``resolve``: ``mapping`` is replaced whole, never mutated."""

    __slots__ = ("aliases", "mapping")

    def __init__(self) -> None:
        self.mapping: dict[str, str] = UNSEEDED
        self.aliases: dict[str, str] = {}


# Truthy on purpose: resolve's "is anything selected?" test sends it down the slow path,
# which seeds the tier from the environment the first time.
UNSEEDED: dict[str, str] = {"<unseeded>": ""}
TIER = _ProcessTier()
_lock = threading.Lock()


def parse_selections(raw: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """Parse ``"attention=sdpa, rotary=torch, profile=reference"``; returns entries and problems.

    Empty items are ignored; an item without ``=``, or with an empty side, is a problem and
    dropped; a repeated key keeps its last value and is reported.
    """
    entries: dict[str, str] = {}
    problems: list[str] = []
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.strip().partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            problems.append(f"{ENV_VAR}: ignoring malformed entry {item.strip()!r} (expected family=implementation)")
            continue
        if key in entries:
            problems.append(f"{ENV_VAR}: {key!r} is given twice; using {value!r}")
        entries[key] = value
    return entries, tuple(problems)


def _read_environment(aliases: Mapping[str, str]) -> dict[str, str]:
    entries, problems = parse_selections(os.environ.get(ENV_VAR, ""))
    for problem in problems:
        warn_once(problem)
    for family, variable in aliases.items():
        value = os.environ.get(variable, "").strip().lower()
        if value:
            entries.setdefault(family, value)
    profile = entries.get(PROFILE)
    if profile is not None and profile not in PROFILES:
        warn_once(f"{ENV_VAR}: unknown profile {profile!r}; known profiles: {list(PROFILES)}. Ignoring it.")
        del entries[PROFILE]
    for family in entries:
        if is_steered(family):
            warn_once(f"{ENV_VAR}: {family}={entries[family]!r} is ignored: {steered_hint(family)}")
        elif family != PROFILE and family not in _FAMILIES:
            warn_once(
                f"{ENV_VAR}: unknown operator family {family!r} (known: {sorted(_FAMILIES)}); "
                "it is ignored until a family of that name is registered"
            )
    return entries


def seeded() -> dict[str, str]:
    """The process tier, reading the environment now if this is the first use."""
    mapping = TIER.mapping
    if mapping is UNSEEDED:
        with _lock:
            if TIER.mapping is UNSEEDED:
                TIER.mapping = _read_environment(TIER.aliases)
            mapping = TIER.mapping
    return mapping


def reload_env() -> Mapping[str, str]:
    """Re-read ``INSPECTOR_OPS`` and the legacy variables, replacing any ``set_op`` edits."""
    with _lock:
        TIER.mapping = _read_environment(TIER.aliases)
        return MappingProxyType(dict(TIER.mapping))


def register_env_alias(family: str, variable: str) -> None:
    """Let a legacy single-value variable select ``family`` (an ``INSPECTOR_OPS`` entry wins)."""
    with _lock:
        TIER.aliases = {**TIER.aliases, family: variable}
        if TIER.mapping is not UNSEEDED:
            value = os.environ.get(variable, "").strip().lower()
            if value and family not in TIER.mapping:
                TIER.mapping = {**TIER.mapping, family: value}


def set_op(family: str, impl: str | None) -> None:
    """Select ``impl`` for ``family`` process-wide (soft), or clear it with ``None``.

    ``set_op("profile", "reference")`` makes every family without a selection use its
    reference fallback.
    """
    if family == PROFILE:
        if impl is not None and impl not in PROFILES:
            raise ValueError(f"Unknown profile {impl!r}. Profiles: {list(PROFILES)}; None clears it")
    else:
        _family(family)
        if impl is not None and is_steered(family):
            raise ValueError(f"set_op({family!r}, {impl!r}): {steered_hint(family)}")
        if impl is not None and not isinstance(impl, str):
            raise TypeError(
                f"set_op takes a row name, got {type(impl).__name__}; "
                "select objects for a block with op_backend(...) instead"
            )
    current = seeded()
    with _lock:
        mapping = dict(TIER.mapping if TIER.mapping is not UNSEEDED else current)
        if impl is None:
            mapping.pop(family, None)
        else:
            mapping[family] = impl
        TIER.mapping = mapping


def steered_hint(family: str) -> str:
    """Why a steered family takes no process-wide selection, and what to use instead."""
    return (
        f"{family} mirrors another library's own choice, which only that library's settings change "
        f"process-wide (for torch_sdpa: torch.backends.cuda.enable_flash_sdp(False) and friends); select it "
        f"for a block with `with op_backend({family}=...):`, which steers the library too"
    )


def process_selection() -> Mapping[str, str]:
    """A read-only snapshot of the process tier (family or ``profile`` -> name)."""
    return MappingProxyType(dict(seeded()))


def env_selection(family: str) -> str | None:
    """The process-tier selection for one family, if any."""
    return seeded().get(family)


def restore_tier(mapping: dict[str, str], aliases: dict[str, str]) -> None:
    with _lock:
        TIER.mapping = mapping
        TIER.aliases = aliases
