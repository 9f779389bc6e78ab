"""The process tier: ``INSPECTOR_OPS``, legacy per-family variables and ``set_op``.

The environment is read once, on the first decision that needs it, and again only on
``reload_env()``; resolution never touches ``os.environ``. The tier is soft: a name that is
unknown, unavailable or incapable warns once and the chain decides instead. Entries for
families registered later are kept and apply once the family exists.

A steered family (``torch_sdpa``, which mirrors PyTorch's own choice) takes no process-wide
selection and no profile: what it reports must be what the other library runs, and only the
library's own flags change that process-wide. ``set_op`` refuses it, saying what to use instead.

The tier is one ``ProcessTier`` owned by the dispatch registry (``registry.tier``); the
module-level ``set_op``, ``reload_env`` and friends are its methods on the default registry.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from inspector.dispatch.notices import Notices

ENV_VAR = "INSPECTOR_OPS"
PROFILE = "profile"
PROFILES = ("reference",)


class Families(Protocol):
    """What the tier asks of the registry that owns it."""

    notices: Notices

    def is_steered(self, name: str) -> bool: ...

    def registered(self) -> Collection[str]: ...

    def get_family(self, name: str) -> Any: ...


class TierState(NamedTuple):
    mapping: dict[str, str] | None
    aliases: dict[str, str]


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


def steered_hint(family: str) -> str:
    """Why a steered family takes no process-wide selection, and what to use instead."""
    return (
        f"{family} mirrors another library's own choice, which only that library's settings change "
        f"process-wide (for torch_sdpa: torch.backends.cuda.enable_flash_sdp(False) and friends); select it "
        f"for a block with `with op_backend({family}=...):`, which steers the library too"
    )


class ProcessTier:
    """The process-wide selection: ``mapping`` (``None`` until the environment is read) and ``idle``.

    ``idle`` is true only when the environment has been read and nothing is selected: then
    ``resolve`` skips the tier without reading ``mapping`` (the hot path reads one attribute).
    ``mapping`` is replaced whole, never mutated.
    """

    __slots__ = ("_lock", "_registry", "aliases", "idle", "mapping")

    def __init__(self, families: Families) -> None:
        self._registry = families
        self._lock = threading.Lock()
        self.mapping: dict[str, str] | None = None
        self.aliases: dict[str, str] = {}
        self.idle = False

    def _set(self, mapping: dict[str, str] | None) -> None:
        self.mapping = mapping
        self.idle = mapping is not None and not mapping

    def _read_environment(self) -> dict[str, str]:
        warn_once = self._registry.notices.warn_once
        entries, problems = parse_selections(os.environ.get(ENV_VAR, ""))
        for problem in problems:
            warn_once(problem)
        for family, variable in self.aliases.items():
            value = os.environ.get(variable, "").strip().lower()
            if value:
                entries.setdefault(family, value)
        profile = entries.get(PROFILE)
        if profile is not None and profile not in PROFILES:
            warn_once(f"{ENV_VAR}: unknown profile {profile!r}; known profiles: {list(PROFILES)}. Ignoring it.")
            del entries[PROFILE]
        known = self._registry.registered()
        for family in entries:
            if self._registry.is_steered(family):
                warn_once(f"{ENV_VAR}: {family}={entries[family]!r} is ignored: {steered_hint(family)}")
            elif family != PROFILE and family not in known:
                warn_once(
                    f"{ENV_VAR}: unknown operator family {family!r} (known: {sorted(known)}); "
                    "it is ignored until a family of that name is registered"
                )
        return entries

    def seeded(self) -> dict[str, str]:
        """The process tier, reading the environment now if this is the first use."""
        mapping = self.mapping
        if mapping is None:
            with self._lock:
                if self.mapping is None:
                    self._set(self._read_environment())
                mapping = self.mapping
        assert mapping is not None
        return mapping

    def reload_env(self) -> Mapping[str, str]:
        """Re-read ``INSPECTOR_OPS`` and the legacy variables, replacing any ``set_op`` edits."""
        with self._lock:
            mapping = self._read_environment()
            self._set(mapping)
            return MappingProxyType(dict(mapping))

    def register_env_alias(self, family: str, variable: str) -> None:
        """Let a legacy single-value variable select ``family`` (an ``INSPECTOR_OPS`` entry wins)."""
        with self._lock:
            self.aliases = {**self.aliases, family: variable}
            if self.mapping is not None:
                value = os.environ.get(variable, "").strip().lower()
                if value and family not in self.mapping:
                    self._set({**self.mapping, family: value})

    def set_op(self, family: str, impl: str | None) -> None:
        """Select ``impl`` for ``family`` process-wide (soft), or clear it with ``None``.

        ``set_op("profile", "reference")`` makes every family without a selection use its
        reference fallback.
        """
        if family == PROFILE:
            if impl is not None and impl not in PROFILES:
                raise ValueError(f"Unknown profile {impl!r}. Profiles: {list(PROFILES)}; None clears it")
        else:
            self._registry.get_family(family)
            if impl is not None and self._registry.is_steered(family):
                raise ValueError(f"set_op({family!r}, {impl!r}): {steered_hint(family)}")
            if impl is not None and not isinstance(impl, str):
                raise TypeError(
                    f"set_op takes a row name, got {type(impl).__name__}; "
                    "select objects for a block with op_backend(...) instead"
                )
        current = self.seeded()
        with self._lock:
            mapping = dict(self.mapping if self.mapping is not None else current)
            if impl is None:
                mapping.pop(family, None)
            else:
                mapping[family] = impl
            self._set(mapping)

    def process_selection(self) -> Mapping[str, str]:
        """A read-only snapshot of the process tier (family or ``profile`` -> name)."""
        return MappingProxyType(dict(self.seeded()))

    def env_selection(self, family: str) -> str | None:
        """The process-tier selection for one family, if any."""
        return self.seeded().get(family)

    # -- isolation ------------------------------------------------------------------------------
    def save_state(self) -> TierState:
        with self._lock:
            return TierState(self.mapping, dict(self.aliases))

    def restore_state(self, state: TierState) -> None:
        with self._lock:
            self.aliases = dict(state.aliases)
            self._set(state.mapping)
