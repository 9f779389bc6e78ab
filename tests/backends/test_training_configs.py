"""Real training configs: other top-level sections pass through untouched; OmegaConf DictConfigs are accepted."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re

import pytest
from omegaconf import DictConfig, OmegaConf

import inspector.backends as backends
from inspector.backends import ConfigError, ConfigTypeError, DataConfig, TrainConfig, resolve_dataset_type

TRAINING_YAML = """
name: vit-small
epochs: 3
seed: 7
data:
  dataset_type: a
  batch_size: 32
  options: {fields: {obs: [4]}}
model:
  arch: vit
  hidden: 384
  layers: [6, 6]
optim:
  lr: 0.0003
  betas: [0.9, 0.95]
trainer: {precision: bf16, devices: 1}
"""


@pytest.fixture
def with_a(registry, make_backend):
    registry.register_module("a", make_backend("a"))
    return registry


def test_a_training_config_with_model_and_optim_sections_loads(with_a, tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(TRAINING_YAML)
    cfg = backends.load_config(path)
    assert (cfg.name, cfg.epochs, cfg.seed, cfg.data.batch_size) == ("vit-small", 3, 7, 32)
    assert cfg.extra == {
        "model": {"arch": "vit", "hidden": 384, "layers": [6, 6]},
        "optim": {"lr": 0.0003, "betas": [0.9, 0.95]},
        "trainer": {"precision": "bf16", "devices": 1},
    }
    assert backends.active_backend() == "a"


def test_sections_read_as_attributes_and_unknown_names_list_what_exists(with_a):
    cfg = backends.load_config({"data": {"dataset_type": "a"}, "model": {"hidden": 8}})
    assert cfg.model == {"hidden": 8} and cfg.model is cfg.extra["model"]
    with pytest.raises(AttributeError, match=re.escape("sections: ['model']")):
        cfg.optim  # noqa: B018


def test_passed_through_sections_are_the_very_objects_given(with_a):
    model = {"hidden": 8, "weird": object()}
    cfg = backends.load_config({"data": {"dataset_type": "a"}, "model": model})
    assert cfg.extra["model"] is model


def test_the_sections_mapping_is_read_only(with_a):
    cfg = backends.load_config({"data": {"dataset_type": "a"}, "model": {}})
    with pytest.raises(ConfigTypeError, match=re.escape("TrainConfig.extra is read-only")):
        cfg.extra["optim"] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        cfg.extra.pop("model")  # type: ignore[attr-defined]


def test_a_section_may_be_named_extra(with_a):
    cfg = backends.load_config({"data": {"dataset_type": "a"}, "extra": {"x": 1}})
    assert cfg.extra == {"extra": {"x": 1}}


def test_the_data_section_stays_the_inspectors_to_validate(with_a):
    with pytest.raises(ConfigError, match=r"Unknown config key 'data.batchsize'. Did you mean 'data.batch_size'\?"):
        backends.load_config({"data": {"dataset_type": "a", "batchsize": 1}, "model": {}})
    with pytest.raises(ConfigError, match=re.escape("epochs must be an int >= 1; got 0")):
        backends.load_config({"data": {"dataset_type": "a"}, "epochs": 0, "model": {}})


def test_non_string_top_level_keys_are_refused(with_a):
    with pytest.raises(ConfigError, match="Top-level config keys must be strings; got 1"):
        backends.load_config({"data": {"dataset_type": "a"}, 1: "x"})


def test_a_flat_dataset_type_beside_an_agreeing_data_section_passes_through(with_a):
    cfg = backends.load_config({"dataset_type": "a", "data": {"dataset_type": "a"}})
    assert cfg.extra == {"dataset_type": "a"}


def test_a_flat_dataset_type_that_disagrees_with_the_data_section_is_refused(with_a, make_backend):
    with_a.register_module("b", make_backend("b"))
    with pytest.raises(ConfigError, match="names two dataset types") as exc:
        backends.load_config({"dataset_type": "b", "data": {"dataset_type": "a"}})
    assert exc.value.key == "dataset_type"


def test_a_config_with_sections_pickles_copies_and_replaces(with_a):
    cfg = backends.load_config({"data": {"dataset_type": "a"}, "model": {"hidden": [1, 2]}})
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert copy.deepcopy(cfg) == cfg and copy.deepcopy(cfg).extra["model"] is not cfg.extra["model"]
    assert dataclasses.replace(cfg, epochs=2).extra == cfg.extra


def test_train_config_refuses_an_extra_that_shadows_its_own_keys():
    with pytest.raises(ConfigError, match="'data' is not one of them"):
        TrainConfig(data=DataConfig("a"), extra={"data": {}})


# --- OmegaConf / Hydra -----------------------------------------------------------------


def _hydra_like() -> DictConfig:
    return OmegaConf.create(
        {
            "data": {"dataset_type": "a", "batch_size": "${trainer.batch}", "options": {"fields": {"obs": [4]}}},
            "trainer": {"batch": 16},
            "model": {"hidden": 64, "later": "???"},
        }
    )


def test_a_dict_config_is_accepted_where_a_mapping_is(with_a):
    cfg = backends.load_config(_hydra_like())
    assert cfg.data.batch_size == 16  # interpolations are resolved in the data section
    assert type(cfg.data.options) is backends._config.Options
    assert type(cfg.data.options["fields"]) is dict and type(cfg.data.options["fields"]["obs"]) is list
    assert pickle.loads(pickle.dumps(cfg.data)) == cfg.data


def test_dict_config_sections_pass_through_as_dict_configs(with_a):
    source = _hydra_like()
    cfg = backends.load_config(source)
    assert isinstance(cfg.model, DictConfig) and cfg.model.hidden == 64
    assert OmegaConf.is_missing(cfg.model, "later")  # a '???' outside data is the training code's business


def test_a_missing_value_in_the_data_section_names_its_key(with_a):
    source = OmegaConf.create({"data": {"dataset_type": "a", "options": {"root": "???"}}})
    with pytest.raises(ConfigError, match=re.escape("Cannot read data.options.root: Missing mandatory value")) as exc:
        backends.load_config(source)
    assert exc.value.key == "data.options.root"
    assert backends.active_backend() is None


def test_a_broken_interpolation_in_the_data_section_names_its_key(with_a):
    source = OmegaConf.create({"data": {"dataset_type": "a", "options": {"files": ["${nowhere}"]}}})
    with pytest.raises(ConfigError, match=re.escape("Cannot read data.options.files")):
        backends.load_config(source)


def test_a_data_config_built_from_dict_config_options_holds_plain_values():
    options = OmegaConf.create({"fields": {"obs": [4]}})
    assert DataConfig("a", options=options).options == {"fields": {"obs": [4]}}


def test_resolve_dataset_type_reads_a_dict_config():
    assert resolve_dataset_type(_hydra_like(), default="x") == "a"
    assert resolve_dataset_type(OmegaConf.create({"model": {}}), default="x") == "x"


def test_to_dict_is_the_file_form_and_round_trips_through_dict_config(with_a, tmp_path):
    cfg = backends.load_config({"data": {"dataset_type": "a", "batch_size": 2}, "model": {"hidden": 3}})
    as_dict = cfg.to_dict()
    assert as_dict["model"] == {"hidden": 3} and type(as_dict["data"]["options"]) is dict
    assert backends.load_config(OmegaConf.create(as_dict)) == cfg
    path = tmp_path / "saved.yaml"
    OmegaConf.save(OmegaConf.create(as_dict), path)
    assert backends.load_config(path) == cfg


def test_an_unreadable_section_outside_data_passes_through_as_written(with_a):
    source = OmegaConf.create({"data": {"dataset_type": "a"}, "run_dir": "???", "model": "${nowhere}"})
    cfg = backends.load_config(source)
    assert cfg.extra == {"run_dir": "???", "model": "${nowhere}"}  # the training code's to resolve
    again = OmegaConf.create(cfg.to_dict())
    assert OmegaConf.is_missing(again, "run_dir") and OmegaConf.is_interpolation(again, "model")


def test_an_unreadable_value_of_the_inspectors_own_keys_names_it(with_a):
    source = OmegaConf.create({"data": {"dataset_type": "a"}, "epochs": "???"})
    with pytest.raises(ConfigError, match=re.escape("Cannot read epochs: Missing mandatory value")):
        backends.load_config(source)
