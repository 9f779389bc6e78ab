"""Property tests: random mappings never make config loading fail with an unexpected exception type."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.backends import (
    BackendImportError,
    BackendRegistry,
    ConfigError,
    DataConfig,
    TrainConfig,
    parse_config,
    resolve_dataset_type,
)

KNOWN = ("npz", "synthetic")
FAILED = "hdf5"
TOP_KEYS = ("data", "name", "epochs", "seed")
DATA_KEYS = ("dataset_type", "path", "batch_size", "num_workers", "shuffle", "val_fraction", "options")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.sampled_from([*KNOWN, FAILED, "", "unknown"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), inner, max_size=3)
    ),
    max_leaves=8,
)
data_sections = st.dictionaries(st.one_of(st.sampled_from(DATA_KEYS), st.text(max_size=6)), values, max_size=6)
mappings = st.dictionaries(
    st.one_of(st.sampled_from(TOP_KEYS), st.text(max_size=6), st.integers()),
    st.one_of(values, data_sections),
    max_size=5,
)


def _registry() -> BackendRegistry:
    reg = BackendRegistry(discover_plugins=False)
    for name in KNOWN:
        reg.register(name, lambda cfg, ctx: None)
    reg.record_import_error(FAILED, ImportError("No module named 'h5py'"), install="pip install h5py")
    return reg


@settings(max_examples=300, deadline=None)
@given(mappings)
def test_load_config_on_any_mapping_returns_a_config_or_a_config_error(mapping: dict[Any, Any]) -> None:
    reg = _registry()
    try:
        cfg = reg.load_config(mapping)
    except ConfigError as exc:
        assert str(exc).splitlines()[0]
        assert reg.active_backend() is None
    except BackendImportError as exc:
        assert exc.backend_name == FAILED and isinstance(exc.__cause__, ImportError)
    else:
        assert isinstance(cfg, TrainConfig) and cfg.data.dataset_type in KNOWN
        assert reg.active_backend() == cfg.data.dataset_type


@settings(max_examples=300, deadline=None)
@given(st.one_of(mappings, values))
def test_resolve_dataset_type_returns_a_string_or_raises_config_error(candidate: Any) -> None:
    try:
        result = resolve_dataset_type(candidate, default="fallback")
    except ConfigError as exc:
        assert exc.key in ("data.dataset_type", "dataset_type")
        assert not isinstance(exc.value, str)
    else:
        assert isinstance(result, str) and result


def _reference(candidate: Any, default: str) -> str:
    """The documented lookup order, written out independently."""
    if isinstance(candidate, dict):
        nested = candidate.get("data")
        if isinstance(nested, dict) and nested.get("dataset_type"):
            return nested["dataset_type"]
        if candidate.get("dataset_type"):
            return candidate["dataset_type"]
    return default


names = st.text(min_size=1, max_size=8)


maybe_names = st.one_of(names, st.just(""), st.none())


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "data": st.one_of(maybe_names, st.fixed_dictionaries({}, optional={"dataset_type": maybe_names})),
            "dataset_type": maybe_names,
            "other": maybe_names,
        },
    )
)
def test_resolve_dataset_type_follows_the_documented_order(candidate: dict[str, Any]) -> None:
    assert resolve_dataset_type(candidate, default="fallback") == _reference(candidate, "fallback")


valid_configs = st.builds(
    TrainConfig,
    data=st.builds(
        DataConfig,
        dataset_type=st.sampled_from(KNOWN),
        path=st.one_of(st.none(), st.text(min_size=1, max_size=10)),
        batch_size=st.integers(1, 512),
        num_workers=st.integers(0, 8),
        shuffle=st.booleans(),
        val_fraction=st.floats(0, 0.99),
        options=st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    ),
    name=st.text(min_size=1, max_size=10),
    epochs=st.integers(1, 100),
    seed=st.integers(0, 2**31),
    extra=st.dictionaries(
        st.text(min_size=1, max_size=6).filter(lambda k: k not in TOP_KEYS and k != "dataset_type"),
        st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
        max_size=3,
    ),
)


def _plain(cfg: TrainConfig) -> dict[str, Any]:
    """The file form: the other sections sit beside ``data`` at the top level."""
    as_dict = dataclasses.asdict(cfg)
    as_dict["data"]["options"] = dict(cfg.data.options)
    as_dict.update(as_dict.pop("extra"))
    return as_dict


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_configs)
def test_a_config_survives_yaml_and_json_files_unchanged(cfg: TrainConfig) -> None:
    assert parse_config(_plain(cfg)) == cfg
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, dump in ((".yaml", yaml.safe_dump), (".json", json.dumps)):
            path = Path(tmp) / f"train{suffix}"
            path.write_text(dump(_plain(cfg)), encoding="utf-8")
            assert _registry().load_config(path, activate=False) == cfg
