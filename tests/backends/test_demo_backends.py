"""The embedded demo backends build real DataLoaders: synthetic, npz, and hdf5 (import failure without h5py)."""

from __future__ import annotations

import importlib.util
import logging
import math
import re

import numpy as np
import pytest
import torch

import inspector.backends as backends
from inspector.backends import BackendImportError, BuildContext, ConfigError, MissingOperationError
from inspector.examples import data_backends
from inspector.examples.data_backends import install, write_example_episodes

HAS_H5PY = importlib.util.find_spec("h5py") is not None


@pytest.fixture
def demos(registry):
    return install(registry)


def _cfg(dataset_type: str, **data):
    return backends.load_config({"data": {"dataset_type": dataset_type, **data}}, activate=False)


# --- install ------------------------------------------------------------------------------------
def test_install_registers_the_demos_and_records_the_optional_one(demos):
    assert {"npz", "synthetic"} <= set(backends.available_backends())
    snap = backends.snapshot()
    assert snap.backend("synthetic").origin == "inspector.examples.data_backends"
    if not HAS_H5PY:
        assert [f.name for f in snap.failed] == ["hdf5"]


def test_install_is_idempotent(demos, caplog):
    with caplog.at_level(logging.WARNING, logger="inspector.backends"):
        install(demos)
    assert caplog.records == []


def test_importing_the_package_registers_on_the_default_registry():
    assert {"npz", "synthetic"} <= set(backends.available_backends())


# --- synthetic ----------------------------------------------------------------------------------
def test_synthetic_batches_are_dicts_of_trajectory_windows(demos):
    cfg = _cfg("synthetic", batch_size=5)
    bundle = backends.build_data(cfg, BuildContext())
    batch = next(iter(bundle.train_loader))
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in batch.items()}
    assert shapes == {
        "observation": ((5, 4, 4), torch.float32),
        "action": ((5, 4, 2), torch.float32),
        "reward": ((5, 4), torch.float32),
        "episode_index": ((5,), torch.int64),
        "step_index": ((5,), torch.int64),
    }
    assert len(bundle.dataset) == 8 * (32 - 4 + 1)
    assert bundle.train_iters == math.ceil(len(bundle.dataset) / 5) == len(list(bundle.train_loader))
    assert bundle.val_loader is None and bundle.val_iters == 0


def test_synthetic_field_shapes_and_sizes_come_from_options(demos):
    options = {"episodes": 2, "episode_length": 5, "horizon": 2, "fields": {"image": [3, 8, 8], "gripper": []}}
    bundle = backends.build_data(_cfg("synthetic", batch_size=4, options=options))
    batch = next(iter(bundle.train_loader))
    assert batch["image"].shape == (4, 2, 3, 8, 8) and batch["gripper"].shape == (4, 2)
    assert len(bundle.dataset) == 2 * 4


def test_synthetic_data_is_a_smooth_walk_fixed_by_the_seed(demos):
    first = backends.build_data(_cfg("synthetic")).dataset
    again = backends.build_data(_cfg("synthetic")).dataset
    other = backends.build_data(
        backends.load_config({"seed": 1, "data": {"dataset_type": "synthetic"}}, activate=False)
    )
    assert torch.equal(first[7]["observation"], again[7]["observation"])
    assert not torch.equal(first[7]["observation"], other.dataset[7]["observation"])
    episode = first.episode(0)["observation"]
    assert episode.diff(dim=0).abs().mean() < episode.abs().mean()


def test_synthetic_val_split_and_rank_sharding(demos):
    cfg = _cfg("synthetic", val_fraction=0.25)
    rank0 = backends.backend_for("synthetic").describe(cfg, BuildContext(rank=0, world_size=2))
    rank1 = backends.backend_for("synthetic").describe(cfg, BuildContext(rank=1, world_size=2))
    assert rank0["train_episodes"] == [0, 2, 4] and rank1["train_episodes"] == [1, 3, 5]
    assert rank0["val_episodes"] == [6] and rank1["val_episodes"] == [7]
    bundle = backends.build_data(cfg, BuildContext(rank=1, world_size=2))
    assert bundle.val_iters == len(bundle.val_loader) > 0
    assert {int(e) for batch in bundle.train_loader for e in batch["episode_index"]} == {1, 3, 5}


def test_set_epoch_reseeds_the_shuffle(demos):
    bundle = backends.build_data(_cfg("synthetic", shuffle=True, batch_size=1000))

    def order(epoch):
        bundle.set_epoch(epoch)
        batch = next(iter(bundle.train_loader))
        return (batch["episode_index"] * 100 + batch["step_index"]).tolist()

    assert order(1) == order(1) != order(2)


def test_synthetic_stats_match_the_generated_episodes(demos):
    cfg = _cfg("synthetic", options={"episodes": 3, "fields": {"action": [2]}})
    stats = backends.backend_for("synthetic").stats(cfg)
    dataset = backends.build_data(cfg).dataset
    values = torch.cat([dataset.episode(e)["action"].reshape(-1) for e in range(3)])
    assert stats == {
        "action": {"mean": pytest.approx(float(values.mean())), "std": pytest.approx(float(values.std(correction=0)))}
    }


@pytest.mark.parametrize(
    ("options", "fragment", "key"),
    [
        ({"episode": 3}, "The synthetic backend has no option 'episode'", "data.options.episode"),
        ({"horizon": 40}, "horizon (40) must not exceed data.options.episode_length (32)", "data.options.horizon"),
        ({"episodes": 0}, "data.options.episodes must be an int >= 1", "data.options.episodes"),
        (
            {"fields": {"obs": "big"}},
            "data.options.fields.obs must be a list of non-negative ints",
            "data.options.fields.obs",
        ),
        ({"fields": {}}, "data.options.fields must map field names to shapes", "data.options.fields"),
    ],
)
def test_synthetic_options_are_checked(demos, options, fragment, key):
    with pytest.raises(ConfigError) as exc:
        backends.build_data(_cfg("synthetic", options=options))
    assert fragment in str(exc.value) and exc.value.key == key


def test_unknown_option_lists_the_backends_options(demos):
    with pytest.raises(ConfigError) as exc:
        backends.build_data(_cfg("synthetic", options={"episode": 3}))
    assert exc.value.known == ["episode_length", "episodes", "fields", "horizon"]


def test_a_rank_without_training_episodes_is_told_how_to_fix_it(demos):
    with pytest.raises(ValueError, match="Rank 2 of 3 gets no training episodes: 2 cannot be split"):
        backends.build_data(_cfg("synthetic", options={"episodes": 2}), BuildContext(rank=2, world_size=3))


def test_worker_processes_deliver_the_same_batches(demos):
    serial = backends.build_data(_cfg("synthetic", batch_size=16, options={"episodes": 2}))
    parallel = backends.build_data(_cfg("synthetic", batch_size=16, num_workers=2, options={"episodes": 2}))
    for a, b in zip(serial.train_loader, parallel.train_loader, strict=True):
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_synthetic_verbs_are_found_the_default_way(demos):
    proxy = backends.backend_for("synthetic")
    assert dir(proxy) == ["build", "describe", "stats", "supports"]
    with pytest.raises(MissingOperationError, match=r"Supported by: \['npz', 'storage'\]"):
        proxy.load_episode_indices  # noqa: B018


# --- npz ----------------------------------------------------------------------------------------
def test_npz_reads_one_item_per_step_of_every_file(demos, tmp_path):
    files = write_example_episodes(tmp_path, episodes=3, steps=7)
    bundle = backends.build_data(_cfg("npz", path=str(tmp_path), batch_size=4))
    assert len(bundle.dataset) == 21 and bundle.train_iters == 6
    item = bundle.dataset[9]
    with np.load(files[1]) as archive:
        assert np.array_equal(item["observation"].numpy(), archive["observation"][2])
        assert np.array_equal(item["reward"].numpy(), archive["reward"][2])
    assert (int(item["episode_index"]), int(item["step_index"])) == (1, 2)
    batch = next(iter(bundle.train_loader))
    assert {k: tuple(v.shape) for k, v in batch.items()} == {
        "action": (4, 2),
        "observation": (4, 4),
        "reward": (4,),
        "episode_index": (4,),
        "step_index": (4,),
    }


def test_npz_keys_option_limits_the_arrays(demos, tmp_path):
    write_example_episodes(tmp_path, episodes=1)
    item = backends.build_data(_cfg("npz", path=str(tmp_path), options={"keys": ["action"]})).dataset[0]
    assert sorted(item) == ["action", "episode_index", "step_index"]
    with pytest.raises(ConfigError, match="has no array 'rgb'") as exc:
        backends.build_data(_cfg("npz", path=str(tmp_path), options={"keys": ["rgb"]}))
    assert exc.value.known == ["action", "observation", "reward"]


def test_npz_describe_and_episode_indices(demos, tmp_path):
    write_example_episodes(tmp_path, episodes=5, steps=4)
    cfg = _cfg("npz", path=str(tmp_path), val_fraction=0.2)
    proxy = backends.backend_for("npz")
    described = proxy.describe(cfg)
    assert described["episodes"][0] == {"file": "episode_000.npz", "steps": 4}
    assert described["arrays"] == {
        "action": {"shape": [2], "dtype": "float32"},
        "observation": {"shape": [4], "dtype": "float32"},
        "reward": {"shape": [], "dtype": "float32"},
    }
    assert described["val_episodes"] == [4]
    assert proxy.load_episode_indices(cfg, BuildContext(rank=0, world_size=2)) == [0, 2]
    assert proxy.load_episode_indices(cfg, BuildContext(rank=1, world_size=2)) == [1, 3]


def test_npz_helpers_outside_dunder_verbs_are_not_verbs(demos):
    proxy = backends.backend_for("npz")
    assert not proxy.supports("write_example_episodes")
    assert dir(proxy) == ["build", "describe", "load_episode_indices", "supports"]


def test_npz_without_a_path_names_the_key(demos):
    with pytest.raises(ConfigError, match=re.escape("set data.path")) as exc:
        backends.build_data(_cfg("npz"))
    assert exc.value.key == "data.path"


def test_npz_path_that_is_not_a_directory(demos, tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape("not a directory of .npz files")) as exc:
        backends.build_data(_cfg("npz", path=str(tmp_path / "absent")))
    assert exc.value.filename == str(tmp_path / "absent")


def test_npz_directory_without_files_says_what_it_holds(demos, tmp_path):
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(FileNotFoundError, match=r"no .npz files in data.path \(it holds \['notes.txt'\]\)"):
        backends.build_data(_cfg("npz", path=str(tmp_path)))


def test_npz_arrays_of_different_lengths_are_refused(demos, tmp_path):
    np.savez(tmp_path / "bad.npz", observation=np.zeros((4, 2)), action=np.zeros((3, 2)))
    with pytest.raises(ValueError, match=re.escape("bad.npz: every array must exist and share its first")) as exc:
        backends.build_data(_cfg("npz", path=str(tmp_path)))
    assert "steps_per_array = {'action': 3, 'observation': 4}" in str(exc.value)


# --- hdf5 (the optional dependency) -------------------------------------------------------------
@pytest.mark.skipif(HAS_H5PY, reason="h5py is installed, so the hdf5 backend imports")
def test_hdf5_without_h5py_is_the_failed_import_shape(demos):
    assert "hdf5" not in backends.available_backends()
    with pytest.raises(BackendImportError) as exc:
        backends.backend_for("hdf5")
    assert (exc.value.install, exc.value.missing_module) == ("pip install h5py", "h5py")
    assert isinstance(exc.value.__cause__, ModuleNotFoundError)
    assert str(exc.value).startswith("Backend 'hdf5' failed to import: No module named 'h5py'.")
    with pytest.raises(BackendImportError):
        backends.load_config({"data": {"dataset_type": "hdf5", "path": "x.hdf5"}})


def test_hdf5_reads_episode_groups_when_h5py_is_installed(demos, tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "demo.hdf5"
    with h5py.File(path, "w") as handle:
        for i, steps in enumerate([5, 7, 6]):
            group = handle.create_group(f"data/demo_{i}")
            group["actions"] = np.full((steps, 2), i, dtype=np.float32)
            group["obs/state"] = np.arange(steps * 3, dtype=np.float64).reshape(steps, 3)
    cfg = _cfg("hdf5", path=str(path), batch_size=4, val_fraction=0.34)
    bundle = backends.build_data(cfg)
    assert len(bundle.dataset) == 12 and bundle.val_iters == 2
    item = bundle.dataset[6]
    assert item["actions"].tolist() == [1.0, 1.0] and item["obs/state"].tolist() == [3.0, 4.0, 5.0]
    described = backends.backend_for("hdf5").describe(cfg)
    assert described["datasets"] == {
        "actions": {"shape": [2], "dtype": "float32"},
        "obs/state": {"shape": [3], "dtype": "float64"},
    }


def test_the_demo_package_exports_its_helpers():
    assert data_backends.__all__ == sorted(data_backends.__all__, key=lambda n: (not n.isupper(), n))
