"""Each of torch's device-map checks: category, first line, attributes and evidence; and their order."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from inspector.rpc import (
    DeviceMapCategory,
    DeviceMapError,
    MissingDeviceCountError,
    check_device_maps,
    validate_device_maps,
)
from inspector.rpc._devices import as_device

W = ["worker0", "worker1"]


def refused(counts: Any, maps: Any, devices: Any = None, static: bool = True, names: Any = W) -> DeviceMapError:
    with pytest.raises(DeviceMapError) as caught:
        validate_device_maps(names, counts, maps, devices, is_static_group=static)
    return caught.value


def test_duplicated_devices() -> None:
    error = refused({"worker0": 2, "worker1": 2}, {}, {"worker0": ["cuda:0", "cuda:1", "cuda:0"]})
    assert str(error).startswith(
        "Node worker0 has duplicated devices\n"
        "devices = [device(type='cuda', index=0), device(type='cuda', index=1), device(type='cuda', index=0)]\n"
        "duplicated = ['cuda:0']"
    )
    assert (error.category, error.worker, error.target) == (DeviceMapCategory.DUPLICATED_DEVICES, "worker0", None)
    assert [str(d) for d in error.devices] == ["cuda:0"]


def test_devices_with_invalid_indices() -> None:
    error = refused({"worker0": 0, "worker1": 2}, {}, {"worker0": ["cuda:0"]})
    assert str(error).startswith(
        "Node worker0 has devices with invalid indices\ndevices = [device(type='cuda', index=0)]\ndevice count = 0"
    )
    assert error.category == "INVALID_DEVICE_INDEX" and error.device_count == 0
    assert "only cpu is valid there" in str(error)


def test_unknown_target_in_a_static_group() -> None:
    error = refused({"worker0": 1, "worker1": 1}, {"worker0": {"worker9": {"cpu": "cpu"}}})
    assert str(error).startswith(
        "Node worker0 has invalid target node names in its device maps\n"
        "device maps = dict_keys(['worker9'])\nnode names = ['worker0', 'worker1']\nunknown target = 'worker9'"
    )
    assert (error.category, error.worker, error.target) == ("UNKNOWN_TARGET_NAME", "worker0", "worker9")


def test_unknown_target_is_allowed_in_a_dynamic_group_and_its_devices_are_not_checked() -> None:
    validate_device_maps(
        W, {"worker0": 1, "worker1": 1}, {"worker0": {"ghost": {"cuda:0": "cuda:7"}}}, is_static_group=False
    )


def test_duplicated_target_devices() -> None:
    error = refused({"worker0": 2, "worker1": 2}, {"worker0": {"worker1": {"cuda:0": "cuda:1", "cuda:1": "cuda:1"}}})
    assert error.problem.headline == ("Node worker0 has duplicated target devices in its device map for worker1")
    assert (error.category, error.worker, error.target) == ("DUPLICATED_TARGET", "worker0", "worker1")
    assert [str(d) for d in error.devices] == ["cuda:1"] and len(error.device_map) == 2


def test_unexpected_source_devices() -> None:
    error = refused(
        {"worker0": 2, "worker1": 2}, {"worker0": {"worker1": {"cuda:1": "cuda:0"}}}, {"worker0": ["cuda:0"]}
    )
    assert str(error).startswith(
        "Node worker0 has unexpected source devices in its device map for worker1\n"
        "device map = {device(type='cuda', index=1): device(type='cuda', index=0)}\n"
        "devices = [device(type='cuda', index=0)]\nunexpected sources = ['cuda:1']"
    )
    assert (error.category, error.target) == ("UNEXPECTED_SOURCE", "worker1")


def test_source_devices_with_invalid_indices_the_direction_mistake() -> None:
    # worker0 has one GPU, worker1 two: cuda:1 exists only on the callee, so it cannot be a source.
    error = refused({"worker0": 1, "worker1": 2}, {"worker0": {"worker1": {"cuda:1": "cuda:0"}}})
    assert str(error).partition("\n")[0] == (
        "Node worker0 has source devices with invalid indices in its device map for worker1"
    )
    assert (error.category, error.worker, error.target, error.device_count) == (
        "INVALID_SOURCE_INDEX",
        "worker0",
        "worker1",
        1,
    )
    assert "sources are the caller's devices" in str(error)
    assert "worker0 has 1 CUDA device: use cpu or cuda:0" in str(error)


def test_unexpected_target_devices() -> None:
    error = refused(
        {"worker0": 2, "worker1": 2}, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}}, {"worker1": ["cuda:0"]}
    )
    assert str(error).partition("\n")[0] == "Node worker0 has unexpected target devices in its device map for worker1"
    assert (error.category, [str(d) for d in error.devices]) == ("UNEXPECTED_TARGET", ["cuda:1"])


def test_target_devices_with_invalid_indices() -> None:
    error = refused({"worker0": 2, "worker1": 1}, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}})
    assert str(error).partition("\n")[0] == (
        "Node worker0 has target devices with invalid indices in its device map for worker1"
    )
    assert (error.category, error.device_count, [str(d) for d in error.devices]) == (
        "INVALID_TARGET_INDEX",
        1,
        ["cuda:1"],
    )


def test_accepted_topologies_return_none() -> None:
    counts = {"worker0": 2, "worker1": 2}
    assert validate_device_maps(W, counts, {"worker0": {"worker1": {"cuda:0": "cuda:1", "cpu": "cpu"}}}) is None
    assert validate_device_maps(W, counts, {"worker0": {"worker0": {"cuda:0": "cuda:1"}}}) is None  # self map
    assert check_device_maps(W, counts, {}) == ()


def test_a_bad_device_list_on_a_later_worker_is_reported_before_a_map_error_on_an_earlier_one() -> None:
    counts = {"worker0": 0, "worker1": 0}
    error = refused(counts, {"worker0": {"worker1": {"cuda:0": "cuda:0"}}}, {"worker1": ["cuda:3"]})
    assert (error.category, error.worker) == ("INVALID_DEVICE_INDEX", "worker1")


def test_maps_are_visited_in_insertion_order() -> None:
    counts = {"worker0": 1, "worker1": 1, "worker2": 1}
    maps = {"worker0": {"worker2": {"cuda:0": "cuda:5"}, "worker1": {"cuda:4": "cuda:0"}}}
    error = refused(counts, maps, names=["worker0", "worker1", "worker2"])
    assert (error.category, error.target) == ("INVALID_TARGET_INDEX", "worker2")


def test_check_device_maps_lists_every_problem_with_torchs_first_one_first() -> None:
    counts = {"worker0": 1, "worker1": 1}
    maps = {"worker0": {"worker1": {"cuda:0": "cuda:0", "cuda:3": "cuda:0"}, "ghost": {"cpu": "cpu"}}}
    problems = check_device_maps(W, counts, maps, {"worker1": ["cuda:0", "cuda:0"]})
    assert [(p.category, p.worker, p.target) for p in problems] == [
        ("DUPLICATED_DEVICES", "worker1", None),
        ("UNKNOWN_TARGET_NAME", "worker0", "ghost"),
        ("DUPLICATED_TARGET", "worker0", "worker1"),
        ("INVALID_SOURCE_INDEX", "worker0", "worker1"),
    ]
    assert refused(counts, maps, {"worker1": ["cuda:0", "cuda:0"]}).problem == problems[0]


def test_index_less_cuda_is_a_device_map_error_carrying_torchs_type_error() -> None:
    error = refused({"worker0": 2, "worker1": 2}, {}, {"worker0": ["cuda"]})
    assert error.category == "INVALID_DEVICE_INDEX" and error.torch_exception == "TypeError"
    assert error.torch_message == "'<=' not supported between instances of 'int' and 'NoneType'"
    assert "torch raises = TypeError" in str(error) and "give every cuda device an index" in str(error)
    with pytest.raises(TypeError, match="not supported"):
        from torch.distributed.rpc.backend_registry import _validate_device_maps

        _validate_device_maps(
            W,
            {"worker0": 2, "worker1": 2},
            {"worker0": {}, "worker1": {}},
            {"worker0": [torch.device("cuda")], "worker1": []},
        )


def test_index_less_cuda_after_an_invalid_device_is_a_plain_value_error_as_in_torch() -> None:
    error = refused({"worker0": 1, "worker1": 1}, {"worker0": {"worker1": {"cuda:5": "cuda:0", "cuda": "cpu"}}})
    assert error.category == "INVALID_SOURCE_INDEX" and error.torch_exception == "ValueError"
    assert error.torch_message == str(error).split("\ninvalid sources")[0]


def test_torch_devices_and_per_type_counts_are_accepted() -> None:
    maps = {"worker0": {"worker1": {torch.device("cuda:0"): torch.device("cuda:7")}}}
    validate_device_maps(W, {"worker0": {"cuda": 1}, "worker1": {"cuda": 8, "xpu": 2}}, maps)
    error = refused({"worker0": {"cuda": 1}, "worker1": {"xpu": 8}}, maps)
    assert error.category == "INVALID_TARGET_INDEX" and error.device_count == 0


def test_a_missing_device_count_names_the_worker_and_the_known_ones() -> None:
    with pytest.raises(KeyError, match="No device count for worker 'worker1'") as caught:
        validate_device_maps(W, {"worker0": 1}, {})
    assert isinstance(caught.value, MissingDeviceCountError)
    assert (caught.value.worker, caught.value.known) == ("worker1", ["worker0"])


def test_non_cuda_accelerators_are_invalid_as_in_torch() -> None:
    error = refused({"worker0": 1, "worker1": 1}, {"worker0": {"worker1": {"xpu:0": "cuda:0"}}})
    assert error.category == "INVALID_SOURCE_INDEX" and [str(d) for d in error.devices] == ["xpu:0"]


def test_long_lists_in_a_message_show_their_first_entries_and_a_count() -> None:
    many = {f"cuda:{i}": "cuda:0" for i in range(100)}  # 100 sources onto one target
    error = refused({"worker0": 100, "worker1": 1}, {"worker0": {"worker1": many}})
    lines = str(error).splitlines()
    assert lines[0] == "Node worker0 has duplicated target devices in its device map for worker1"
    assert lines[1].startswith("device map = {device(type='cuda', index=0): device(type='cuda', index=0), ")
    assert lines[1].endswith(", ... (92 more)}") and len(lines[1]) < 800
    assert lines[2] == "duplicated targets = ['cuda:0']"
    assert error.device_map == {as_device(f"cuda:{i}"): as_device("cuda:0") for i in range(100)}  # all kept
    names = [f"w{i}" for i in range(50)]
    unknown = refused({n: 0 for n in names}, {"w0": {"ghost": {"cpu": "cpu"}}}, names=names)
    assert "node names = ['w0', 'w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', ... (42 more)]" in str(unknown)
