"""Reverse maps and device lists, as torch derives them once the maps pass."""

from __future__ import annotations

import pytest
import torch
from torch.distributed.rpc import backend_registry as torch_registry

from inspector.rpc import Device, DeviceMapError, create_device_list, create_reverse_mapping

cuda = [Device("cuda", i) for i in range(3)]


def test_reverse_mapping_inverts_each_callers_map_for_me() -> None:
    maps = {"w0": {"w1": {"cuda:0": "cuda:1"}}, "w1": {}, "w2": {"w1": {"cuda:2": "cuda:0"}, "w0": {"cpu": "cpu"}}}
    assert create_reverse_mapping("w1", ["w0", "w1", "w2"], maps) == {
        "w0": {cuda[1]: cuda[0]},
        "w2": {cuda[0]: cuda[2]},
    }


def test_an_empty_map_still_creates_an_empty_reverse_entry_as_in_torch() -> None:
    assert create_reverse_mapping("w1", ["w0", "w1"], {"w0": {"w1": {}}}) == {"w0": {}}
    assert torch_registry._create_reverse_mapping("w1", ["w0", "w1"], {"w0": {"w1": {}}, "w1": {}}) == {"w0": {}}


def test_device_list_is_the_mapped_local_devices_without_cpu_sorted_by_index() -> None:
    listed = create_device_list([], {"w0": {"cuda:2": "cuda:1", "cpu": "cpu"}}, {"w2": {"cuda:0": "cuda:2"}})
    assert listed == [cuda[0], cuda[2]]


def test_cpu_with_an_index_survives_into_the_device_list_as_in_torch() -> None:
    assert create_device_list([], {"w0": {"cpu:0": "cpu"}}, {}) == [Device("cpu", 0)]
    theirs = torch_registry._create_device_list([], {"w0": {torch.device("cpu:0"): torch.device("cpu")}}, {})
    assert [str(d) for d in theirs] == ["cpu:0"]


def test_an_explicit_device_list_wins_and_is_sorted_by_index() -> None:
    assert create_device_list(["cuda:2", "cuda:0"], {"w0": {"cuda:1": "cuda:1"}}, {}) == [cuda[0], cuda[2]]


def test_cpu_mixed_into_an_explicit_list_is_a_device_map_error_where_torch_crashes() -> None:
    with pytest.raises(TypeError) as theirs:
        torch_registry._create_device_list([torch.device("cuda:0"), torch.device("cpu")], {}, {})
    with pytest.raises(DeviceMapError) as caught:
        create_device_list(["cuda:0", "cpu"], {}, {}, worker="w0")
    error = caught.value
    assert (error.category, error.worker, [str(d) for d in error.devices]) == ("UNSORTABLE_DEVICE_LIST", "w0", ["cpu"])
    assert error.torch_exception == "TypeError" and error.torch_message == str(theirs.value)
    assert str(error).startswith("Node w0 has a device list that cannot be sorted by index")


def test_a_lone_cpu_in_an_explicit_list_sorts_fine_as_in_torch() -> None:
    assert create_device_list(["cpu"], {}, {}) == [Device("cpu")]
