"""The ``storage`` demo backend reads episodes through the real shared-memory loader."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
import torch

import inspector.backends as backends
from inspector.backends import BuildContext, ConfigError
from inspector.examples.data_backends import install, storage, write_example_storage
from inspector.loader import FileStorage


@pytest.fixture
def episodes(tmp_path):
    write_example_storage(tmp_path, episodes=5, steps=6, seed=3)
    return tmp_path


def _cfg(path, seed=0, **data):
    mapping = {"data": {"dataset_type": "storage", "path": str(path), **data}, "seed": seed}
    return backends.load_config(mapping, activate=False)


def test_storage_is_one_of_the_embedded_backends(registry):
    install(registry)
    assert "storage" in backends.available_backends()
    assert backends.backend_for("storage").supports("describe")
    assert not backends.backend_for("storage").supports("write_example_storage")  # a helper, not a verb


def test_every_step_arrives_once_with_the_saved_values_and_no_worker_is_left(registry, episodes, new_processes):
    install(registry)
    bundle = backends.build_data(_cfg(episodes, batch_size=4, val_fraction=0.2), BuildContext())
    assert (bundle.train_iters, bundle.val_iters) == (6, 2)  # 4 episodes x 6 steps / 4; 1 x 6 / 4
    seen = {}
    for batch in bundle.train_loader:
        for i in range(batch["observation"].shape[0]):
            seen[(int(batch["episode_index"][i]), int(batch["step_index"][i]))] = batch["observation"][i]
    assert sorted(seen) == [(e, s) for e in range(4) for s in range(6)]
    saved = FileStorage(episodes / "episode_002.istore").load()
    torch.testing.assert_close(seen[(2, 5)], torch.from_numpy(saved["observation"][5]))
    assert new_processes() == []
    assert sorted(os.listdir(episodes)) == [f"episode_{e:03d}.istore" for e in range(5)]  # files untouched


def test_abandoning_an_epoch_stops_the_loader_workers(registry, episodes, new_processes):
    install(registry)
    iterator = iter(backends.build_data(_cfg(episodes, batch_size=2), BuildContext()).train_loader)
    next(iterator)
    del iterator
    gc.collect()
    assert new_processes() == []


def test_shuffle_changes_with_the_epoch_and_is_reproducible(registry, episodes):
    install(registry)
    dataset = backends.build_data(_cfg(episodes, shuffle=True, seed=1), BuildContext()).dataset
    orders = []
    for epoch in (0, 1, 0):
        dataset.set_epoch(epoch)
        orders.append(dataset.order())
    assert orders[0] == orders[2] and orders[0] != orders[1] and sorted(orders[0]) == [0, 1, 2, 3, 4]


def test_describe_reads_headers_and_ranks_get_their_shard(registry, episodes):
    install(registry)
    cfg = _cfg(episodes)
    info = backends.backend_for("storage").describe(cfg)
    assert info["arrays"] == {
        "action": {"shape": [2], "dtype": "<f4"},
        "observation": {"shape": [4], "dtype": "<f4"},
        "reward": {"shape": [], "dtype": "<f4"},
    }
    assert [e["steps"] for e in info["episodes"]] == [6] * 5
    assert storage.load_episode_indices(cfg, BuildContext(rank=1, world_size=2)) == [1, 3]


def test_bad_configs_name_the_fix(registry, episodes, tmp_path_factory):
    install(registry)
    with pytest.raises(ConfigError, match=r"set data\.num_workers to 0"):
        backends.build_data(_cfg(episodes, num_workers=2), BuildContext())
    with pytest.raises(ConfigError, match="no option 'prefetc'"):
        backends.build_data(_cfg(episodes, options={"prefetc": 2}), BuildContext())
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match=r"no \.istore files"):
        backends.build_data(_cfg(empty), BuildContext())
    FileStorage(episodes / "episode_009.istore").save({"observation": np.zeros((3, 4), np.float32)})
    with pytest.raises(ValueError, match="same arrays"):
        backends.build_data(_cfg(episodes), BuildContext())
