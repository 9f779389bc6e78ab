"""Typed training config: ``TrainConfig(data=DataConfig(dataset_type=...))`` and its validation.

Parsing is pure (a mapping in, a frozen record or a :class:`ConfigError` out); reading files
and setting the active backend live in the registry's ``load_config``.

NOTE [ Whose keys ]
A real training config has more than data: ``model:``, ``optim:``, ``trainer:`` and whatever
else the training code reads. The inspector validates only what it defines (the ``data:``
section and the top-level ``name``, ``epochs`` and ``seed``); every other top-level section is
kept in ``TrainConfig.extra`` exactly as given (the same objects, a ``DictConfig`` node stays
one) and is reachable as ``cfg.extra["model"]`` or ``cfg.model``. The ``data`` section is the
inspector's: unknown keys there are errors with a spelling hint, and its values are made plain
(dicts and lists), so an OmegaConf/Hydra ``DictConfig`` is accepted wherever a mapping is.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from inspector.backends._config_values import check_size, plain
from inspector.backends._errors import ConfigError, ConfigTypeError

DEFAULT_DATASET_TYPE = "synthetic"


class _ReadOnly(dict[str, Any]):
    """A dict that refuses changes, yet pickles and deep-copies like one."""

    _owner = "TrainConfig"

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigTypeError(f"{self._owner} is read-only; make a new config with dataclasses.replace().")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


class Options(_ReadOnly):
    """``DataConfig.options``: passed to the backend; read-only."""

    _owner = "DataConfig.options"


class Sections(_ReadOnly):
    """``TrainConfig.extra``: the config's other top-level sections, as given; read-only."""

    _owner = "TrainConfig.extra"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


Check = Callable[[Any], bool]

# (check, expectation) per field: the validation policy as data, shown verbatim in errors.
_DATA_RULES: dict[str, tuple[Check, str]] = {
    "dataset_type": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "path": (lambda v: v is None or isinstance(v, str), "a string path or null"),
    "batch_size": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "num_workers": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
    "shuffle": (lambda v: isinstance(v, bool), "true or false"),
    "val_fraction": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1,
        "a number in [0, 1)",
    ),
    "options": (lambda v: isinstance(v, Mapping) and all(isinstance(k, str) for k in v), "a mapping"),
}
_TRAIN_RULES: dict[str, tuple[Check, str]] = {
    "name": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "epochs": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "seed": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
}
_OWN_KEYS = frozenset({"data", *_TRAIN_RULES})  # the top-level keys the inspector defines (NOTE [ Whose keys ])


def _check(rules: Mapping[str, tuple[Check, str]], prefix: str, record: Any) -> None:
    for name, (ok, expected) in rules.items():
        value = getattr(record, name)
        if not ok(value):
            raise ConfigError(f"{prefix}{name} must be {expected}; got {value!r}.", key=prefix + name, value=value)


@dataclass(frozen=True)
class DataConfig:
    """Which backend builds the data and how; ``options`` is passed to the backend untouched."""

    dataset_type: str
    path: str | None = None
    batch_size: int = 4
    num_workers: int = 0
    shuffle: bool = False
    val_fraction: float = 0.0
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.path, os.PathLike):
            object.__setattr__(self, "path", os.fspath(self.path))
        _check(_DATA_RULES, "data.", self)
        check_size(self.options, "data.options")
        object.__setattr__(self, "options", Options(plain(self.options, "data.options")))


@dataclass(frozen=True)
class TrainConfig:
    """A training run's config: ``data`` for the backend registry, ``extra`` for everything else.

    ``extra`` holds the other top-level sections untouched (see NOTE [ Whose keys ]); they read
    as attributes too, so training code keeps writing ``cfg.model``.
    """

    data: DataConfig
    name: str = "run"
    epochs: int = 1
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.data, DataConfig):
            raise ConfigError(f"TrainConfig.data must be a DataConfig; got {type(self.data).__name__}.", key="data")
        _check(_TRAIN_RULES, "", self)
        if not isinstance(self.extra, Mapping):
            raise ConfigError(f"TrainConfig.extra must be a mapping; got {type(self.extra).__name__}.", key="extra")
        clash = [k for k in self.extra if not isinstance(k, str) or k in _OWN_KEYS]
        if clash:
            raise ConfigError(
                f"TrainConfig.extra holds the config's other top-level sections; {clash[0]!r} is not one of them.",
                key="extra",
                value=clash[0],
            )
        object.__setattr__(self, "extra", Sections(self.extra))

    def to_dict(self) -> dict[str, Any]:
        """The file form: plain dicts, the other sections beside ``data`` (``load_config`` reads it back).

        ``OmegaConf.create(cfg.to_dict())`` gives the same config as a ``DictConfig``.
        """
        data = {f.name: getattr(self.data, f.name) for f in fields(DataConfig)}
        data["options"] = dict(self.data.options)
        own = {name: getattr(self, name) for name in _TRAIN_RULES}
        return {"data": data, **own, **self.extra}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(
            f"TrainConfig has no field or section {name!r}. Fields: {_field_names(TrainConfig)}; "
            f"sections: {sorted(extra)}."
        )


def _field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]


def _reject_unknown(mapping: Mapping[Any, Any], allowed: list[str], prefix: str, source: str | None) -> None:
    for key in mapping:
        if key in allowed:
            continue
        close = difflib.get_close_matches(key, allowed, n=1) if isinstance(key, str) else []
        hint = f" Did you mean {prefix + close[0]!r}?" if close else ""
        shown = repr(prefix + key) if isinstance(key, str) else f"{prefix}{key!r}"
        raise ConfigError(
            f"Unknown config key {shown}.{hint}",
            key=f"{prefix}{key}",
            known=[prefix + name for name in allowed],
            source=source,
        )


def _top_level(mapping: Mapping[Any, Any], source: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inspector's own top-level keys (read, to be validated) and the other sections (as given)."""
    own, extra = {}, {}
    for key in mapping:
        if not isinstance(key, str):
            raise ConfigError(f"Top-level config keys must be strings; got {key!r}.", key=repr(key), source=source)
        if key == "data":
            continue
        try:
            value = mapping[key]
        except Exception as exc:  # e.g. an OmegaConf '???' or a broken ${...} as a whole top-level value
            node = getattr(mapping, "_get_node", None)
            if key in _TRAIN_RULES or node is None:
                raise ConfigError(f"Cannot read {key}: {exc}".splitlines()[0], key=key, source=source) from exc
            raw = node(key)  # not the inspector's section: kept as written ('???', '${...}'), unresolved
            extra[key] = raw._value() if callable(getattr(raw, "_value", None)) else raw
            continue
        if key in _TRAIN_RULES:
            own[key] = plain(value, key, source)
        else:
            extra[key] = value
    return own, extra


def _check_flat_dataset_type(mapping: Mapping[Any, Any], data: Any, source: str | None) -> None:
    """The legacy flat ``dataset_type``: pointed at ``data:`` when alone, refused when it disagrees."""
    flat = mapping.get("dataset_type")
    if flat is None:
        return
    if not isinstance(data, Mapping):
        raise ConfigError(
            "Unknown config key 'dataset_type'. Put it under the data section: data.dataset_type.",
            key="dataset_type",
            value=flat,
            source=source,
        )
    nested = data.get("dataset_type")
    if nested not in (None, "") and flat != nested:
        raise ConfigError(
            f"The config names two dataset types: dataset_type={flat!r} and data.dataset_type={nested!r}. "
            "Keep the one under data.",
            key="dataset_type",
            value=flat,
            source=source,
        )


def parse_config(
    mapping: Mapping[Any, Any], *, known: Collection[str] | None = None, source: str | None = None
) -> TrainConfig:
    """Validate a nested mapping (a dict, a ``DictConfig``, ...) into a :class:`TrainConfig`.

    The ``data`` section and the top-level ``name``/``epochs``/``seed`` are validated; other
    top-level sections go to ``TrainConfig.extra`` untouched (NOTE [ Whose keys ]). ``known``
    (when given) is the set of dataset types that exist; an unknown one is a
    :class:`ConfigError` listing them. Any problem is a :class:`ConfigError` naming the key.
    """
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"A config must be a mapping; got {type(mapping).__name__}.", source=source)
    check_size(mapping, source=source, strict=False)  # NOTE [ Config size ]
    data = mapping.get("data")
    _check_flat_dataset_type(mapping, data, source)
    own, extra = _top_level(mapping, source)
    if not isinstance(data, Mapping):
        raise ConfigError(
            "The config has no data section: add data: {dataset_type: ...}.",
            key="data",
            value=data,
            known=sorted(known or ()),
            source=source,
        )
    data = plain(data, "data", source)
    _reject_unknown(data, _field_names(DataConfig), "data.", source)
    dataset_type = data.get("dataset_type")
    if dataset_type is None or dataset_type == "":
        raise ConfigError(
            "The config does not name a dataset_type: set data.dataset_type.",
            key="data.dataset_type",
            known=sorted(known or ()),
            source=source,
        )
    if known is not None and isinstance(dataset_type, str) and dataset_type not in known:
        close = difflib.get_close_matches(dataset_type, list(known), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"Unknown dataset_type {dataset_type!r}.{hint}",
            key="data.dataset_type",
            value=dataset_type,
            known=sorted(known),
            source=source,
        )
    try:
        return TrainConfig(data=DataConfig(**data), extra=extra, **own)
    except ConfigError as exc:
        raise ConfigError(exc.message, key=exc.key, value=exc.value, source=source) from None


def resolve_dataset_type(cfg_or_mapping: Any, default: str = DEFAULT_DATASET_TYPE) -> str:
    """The dataset type named by a typed config, a ``DataConfig`` or a mapping, else ``default``.

    Order: ``cfg.data.dataset_type``; ``cfg.dataset_type``; ``mapping["data"]["dataset_type"]``;
    ``mapping["dataset_type"]`` (the legacy flat form); ``default``. Empty values fall through;
    a value that is not a string is a :class:`ConfigError`.
    """
    candidates: list[tuple[str, Any]] = []
    data = getattr(cfg_or_mapping, "data", None)
    if data is not None and not isinstance(cfg_or_mapping, Mapping):
        candidates.append(("data.dataset_type", getattr(data, "dataset_type", None)))
    if not isinstance(cfg_or_mapping, Mapping):
        candidates.append(("dataset_type", getattr(cfg_or_mapping, "dataset_type", None)))
    else:
        nested = cfg_or_mapping.get("data")
        if isinstance(nested, Mapping):
            candidates.append(("data.dataset_type", nested.get("dataset_type")))
        candidates.append(("dataset_type", cfg_or_mapping.get("dataset_type")))
    for key, value in candidates:
        try:
            empty = not value
        except Exception:  # e.g. an array's ambiguous truth value: not empty, and not a string
            empty = False
        if empty:
            continue
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string; got {value!r}.", key=key, value=value)
        return value
    return default
