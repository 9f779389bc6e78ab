"""Typed config: DataConfig/TrainConfig, load_config from YAML/TOML/JSON/mappings, resolve_dataset_type, build_data."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

import inspector.backends as backends
from inspector.backends import (
    BackendImportError,
    BuildContext,
    ConfigError,
    DataBundle,
    DataConfig,
    TrainConfig,
    parse_config,
    resolve_dataset_type,
)

YAML = """
name: demo
epochs: 2
data:
  dataset_type: a
  batch_size: 3
  shuffle: true
  options:
    fields: {obs: [4]}
"""
TOML = """
name = "demo"
epochs = 2

[data]
dataset_type = "a"
batch_size = 3
shuffle = true

[data.options.fields]
obs = [4]
"""
JSON = (
    '{"name": "demo", "epochs": 2, "data": {"dataset_type": "a", "batch_size": 3, "shuffle": true, '
    '"options": {"fields": {"obs": [4]}}}}'
)


@pytest.fixture
def with_a(registry, make_backend):
    registry.register_module("a", make_backend("a"))
    registry.register_module("b", make_backend("b"))
    return registry


def test_data_config_defaults():
    cfg = DataConfig("synthetic")
    assert (cfg.path, cfg.batch_size, cfg.num_workers, cfg.shuffle, cfg.val_fraction) == (None, 4, 0, False, 0.0)
    assert dict(cfg.options) == {}


def test_configs_are_frozen_and_options_read_only():
    cfg = TrainConfig(data=DataConfig("a", options={"k": 1}))
    with pytest.raises(AttributeError):
        cfg.epochs = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.data.options["k"] = 2  # type: ignore[index]


def test_data_config_accepts_a_path_object(tmp_path):
    assert DataConfig("npz", path=tmp_path).path == str(tmp_path)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("batch_size", 0, "an int >= 1"),
        ("batch_size", True, "an int >= 1"),
        ("num_workers", -1, "an int >= 0"),
        ("shuffle", "yes", "true or false"),
        ("val_fraction", 1.0, "a number in [0, 1)"),
        ("options", [1], "a mapping"),
        ("dataset_type", "", "a non-empty string"),
    ],
)
def test_data_config_rejects_bad_values_naming_the_key(field, value, expected):
    kwargs = {"dataset_type": "a", field: value}
    with pytest.raises(ConfigError, match=re.escape(f"data.{field} must be {expected}")) as exc:
        DataConfig(**kwargs)
    assert (exc.value.key, exc.value.value) == (f"data.{field}", value)
    assert isinstance(exc.value, ValueError)


def test_train_config_needs_a_data_config():
    with pytest.raises(ConfigError, match=re.escape("TrainConfig.data must be a DataConfig; got dict")) as exc:
        TrainConfig(data={"dataset_type": "a"})  # type: ignore[arg-type]
    assert exc.value.key == "data"


@pytest.mark.parametrize(("suffix", "text"), [(".yaml", YAML), (".yml", YAML), (".toml", TOML), (".json", JSON)])
def test_load_config_reads_every_supported_format_alike(with_a, tmp_path, suffix, text):
    path = tmp_path / f"train{suffix}"
    path.write_text(text)
    cfg = backends.load_config(str(path))
    assert cfg == TrainConfig(
        data=DataConfig("a", batch_size=3, shuffle=True, options={"fields": {"obs": [4]}}), name="demo", epochs=2
    )
    assert backends.active_backend() == "a"


def test_load_config_takes_a_mapping(with_a):
    cfg = backends.load_config({"data": {"dataset_type": "b"}})
    assert cfg.data.dataset_type == "b" and backends.active_backend() == "b"


def test_load_config_takes_a_typed_config(with_a):
    cfg = TrainConfig(data=DataConfig("a"))
    assert backends.load_config(cfg) is cfg and backends.active_backend() == "a"


def test_missing_dataset_type_lists_the_known_ones(with_a):
    with pytest.raises(ConfigError, match=re.escape("does not name a dataset_type: set data.dataset_type")) as exc:
        backends.load_config({"data": {"batch_size": 2}})
    assert exc.value.key == "data.dataset_type" and exc.value.known == ["a", "b"]
    assert "known = ['a', 'b']" in str(exc.value)


def test_missing_data_section_says_how_to_add_it(with_a):
    with pytest.raises(ConfigError, match="no data section") as exc:
        backends.load_config({"epochs": 2})
    assert exc.value.key == "data" and exc.value.known == ["a", "b"]


def test_unknown_dataset_type_lists_the_known_ones_and_suggests(with_a, tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("data:\n  dataset_type: aa\n")
    with pytest.raises(ConfigError, match=r"Unknown dataset_type 'aa'. Did you mean 'a'\?") as exc:
        backends.load_config(path)
    assert (exc.value.key, exc.value.value, exc.value.known) == ("data.dataset_type", "aa", ["a", "b"])
    assert exc.value.source == str(path) and f"source = {path}" in str(exc.value)
    assert not backends.has_data_backend()


def test_typed_config_with_an_unknown_dataset_type_is_refused(with_a):
    with pytest.raises(ConfigError, match="Unknown dataset_type 'zzz'"):
        backends.load_config(TrainConfig(data=DataConfig("zzz")))


def test_dataset_type_that_failed_to_import_raises_the_import_shape(with_a):
    with_a.record_import_error("hdf5", ImportError("no h5py"), install="pip install h5py")
    with pytest.raises(BackendImportError, match="Backend 'hdf5' failed to import: no h5py") as exc:
        backends.load_config({"data": {"dataset_type": "hdf5"}})
    assert isinstance(exc.value.__cause__, ImportError)
    assert not backends.has_data_backend()


def test_other_top_level_keys_are_passed_through_not_validated(with_a):
    cfg = backends.load_config({"epoch": 1, "data": {"dataset_type": "a"}})
    assert cfg.extra == {"epoch": 1} and cfg.epochs == 1


def test_unknown_data_key_is_named_with_its_section(with_a):
    with pytest.raises(ConfigError, match=r"Unknown config key 'data.batchsize'. Did you mean 'data.batch_size'\?"):
        backends.load_config({"data": {"dataset_type": "a", "batchsize": 1}})


def test_flat_legacy_dataset_type_is_pointed_at_the_data_section(with_a):
    with pytest.raises(ConfigError, match=re.escape("Put it under the data section: data.dataset_type")):
        backends.load_config({"dataset_type": "a"})


def test_bad_value_in_a_file_names_key_and_file(with_a, tmp_path):
    path = tmp_path / "train.toml"
    path.write_text('[data]\ndataset_type = "a"\nbatch_size = 0\n')
    with pytest.raises(ConfigError, match=re.escape("data.batch_size must be an int >= 1; got 0")) as exc:
        backends.load_config(path)
    assert exc.value.source == str(path) and exc.value.key == "data.batch_size"


def test_unparseable_file_is_a_config_error_chained_from_the_parser(with_a, tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("data: [unclosed\n")
    with pytest.raises(ConfigError, match=re.escape("Cannot parse train.yaml")) as exc:
        backends.load_config(path)
    assert exc.value.__cause__ is not None and exc.value.source == str(path)


def test_file_whose_top_level_is_not_a_mapping_is_refused(with_a, tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must hold a mapping at the top level; got list"):
        backends.load_config(path)


def test_unknown_suffix_lists_the_supported_formats(with_a, tmp_path):
    path = tmp_path / "train.ini"
    path.write_text("[data]\n")
    with pytest.raises(ConfigError, match=re.escape("Cannot tell the format of 'train.ini'")) as exc:
        backends.load_config(path)
    assert exc.value.known == [".json", ".toml", ".yaml", ".yml"]


def test_missing_file_is_file_not_found(with_a, tmp_path):
    with pytest.raises(FileNotFoundError):
        backends.load_config(tmp_path / "absent.yaml")


def test_unsupported_source_type_is_a_type_error(with_a):
    with pytest.raises(TypeError, match=re.escape("takes a path to a .yaml/.toml/.json file or a mapping; got int")):
        backends.load_config(3)


def test_parse_config_is_pure_and_checks_known_only_when_given():
    cfg = parse_config({"data": {"dataset_type": "anything"}})
    assert cfg.data.dataset_type == "anything"
    with pytest.raises(ConfigError, match="Unknown dataset_type"):
        parse_config({"data": {"dataset_type": "anything"}}, known={"a"})


# --- resolve_dataset_type (the nested mapping form supported too) --------------------------------
def test_resolve_reads_a_typed_config():
    assert resolve_dataset_type(TrainConfig(data=DataConfig("npz"))) == "npz"
    assert resolve_dataset_type(SimpleNamespace(data=SimpleNamespace(dataset_type="x"))) == "x"


def test_resolve_reads_a_data_config():
    assert resolve_dataset_type(DataConfig("npz")) == "npz"


def test_resolve_reads_the_flat_legacy_mapping_and_falls_back_to_the_default():
    assert resolve_dataset_type({"dataset_type": "x"}) == "x"
    assert resolve_dataset_type({}) == "synthetic" == backends.DEFAULT_DATASET_TYPE
    assert resolve_dataset_type({}, default="d") == "d"


def test_resolve_reads_the_nested_mapping_that_load_config_takes():
    assert resolve_dataset_type({"data": {"dataset_type": "x"}}) == "x"
    assert resolve_dataset_type({"data": {"dataset_type": "x"}, "dataset_type": "y"}) == "x"


@pytest.mark.parametrize("empty", ["", None])
def test_resolve_falls_through_empty_values(empty):
    typed = SimpleNamespace(data=SimpleNamespace(dataset_type=empty))
    assert resolve_dataset_type(typed, default="d") == "d"
    assert resolve_dataset_type({"data": {"dataset_type": empty}, "dataset_type": "flat"}) == "flat"


def test_resolve_refuses_a_value_that_is_not_a_string():
    with pytest.raises(ConfigError, match=re.escape("data.dataset_type must be a string; got 3")) as exc:
        resolve_dataset_type({"data": {"dataset_type": 3}})
    assert (exc.value.key, exc.value.value) == ("data.dataset_type", 3)


# --- build_data ---------------------------------------------------------------------------------
def test_build_data_refuses_a_raw_dict_pointing_at_load_config(registry):
    with pytest.raises(TypeError) as exc:
        backends.build_data({"data": {"dataset_type": "a"}}, BuildContext())
    assert str(exc.value) == (
        "build_data() expects a typed TrainConfig, got dict. "
        "Load via inspector.backends.load_config() instead of passing a raw dict."
    )


def test_build_data_calls_the_named_backend_once_and_returns_its_result(registry, make_backend):
    module = make_backend("counting", "calls = []\n")
    sentinel = DataBundle(dataset=None, train_loader=[])

    def build(cfg, ctx):
        module.calls.append((cfg, ctx))
        return sentinel

    module.build = build
    registry.register_module("counting", module)
    cfg, ctx = TrainConfig(data=DataConfig("counting")), BuildContext(rank=1, world_size=2)
    assert backends.build_data(cfg, ctx) is sentinel
    assert module.calls == [(cfg, ctx)]


def test_build_data_defaults_the_context(registry, make_backend):
    module = make_backend("ctx", "seen = []\ndef build(cfg, ctx):\n    seen.append(ctx)\n")
    registry.register_module("ctx", module)
    backends.build_data(TrainConfig(data=DataConfig("ctx")))
    assert module.seen == [BuildContext(rank=0, world_size=1, device="cpu")]


def test_build_data_on_an_unregistered_type_is_the_unknown_shape(registry):
    with pytest.raises(KeyError, match="Unknown backend 'nowhere'"):
        backends.build_data(TrainConfig(data=DataConfig("nowhere")), BuildContext())


@pytest.mark.parametrize(("rank", "world"), [(2, 2), (-1, 1), (0, 0), (True, 2)])
def test_build_context_checks_rank_and_world_size(rank, world):
    with pytest.raises(ValueError, match="BuildContext"):
        BuildContext(rank=rank, world_size=world)
