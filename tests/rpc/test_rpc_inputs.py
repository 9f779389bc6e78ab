"""Hostile inputs to the device-map functions and plans: wrong shapes, absurd counts, fuzzed values."""

from __future__ import annotations

import contextlib
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.rpc import (
    DeviceCountError,
    PlanError,
    RpcError,
    TopologyPlan,
    TopologyTypeError,
    WorkerPlan,
    check_device_maps,
    preflight_warnings,
    validate_device_maps,
)
from inspector.rpc._devices import MAX_DEVICE_COUNT

W = ["w0", "w1"]
COUNTS = {"w0": 1, "w1": 1}


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (("w0", COUNTS), "names"),
        ((5, COUNTS), "names"),
        (([1, 2], {"1": 0, "2": 0}), "names"),
        ((["w0", None], COUNTS), "names"),
        ((W, [1, 1]), "device_counts"),
        ((W, None), "device_counts"),
        ((W, COUNTS, [("w0", "w1")]), "device_maps"),
        ((W, COUNTS, {"w0": ["w1"]}), "device_maps['w0']"),
        ((W, COUNTS, {"w0": {"w1": 3}}), "device_maps['w0']['w1']"),
        ((W, COUNTS, {"w0": {"w1": "cuda:0"}}), "device_maps['w0']['w1']"),
        ((W, COUNTS, {"w0": {"w1": [("cpu", "cpu", "cpu")]}}), "device_maps['w0']['w1']"),
        ((W, COUNTS, {}, ["cuda:0"]), "devices"),
        ((W, COUNTS, {}, {"w0": "cuda:0"}), "devices['w0']"),
        ((W, {"w0": 1.5, "w1": 1}), "a device count (worker 'w0')"),
        ((W, {"w0": True, "w1": 1}), "a device count (worker 'w0')"),
    ],
)
def test_arguments_of_the_wrong_shape_are_a_type_error_naming_the_argument(
    args: tuple[Any, ...], argument: str
) -> None:
    for check in (validate_device_maps, check_device_maps, preflight_warnings):
        with pytest.raises(TypeError) as caught:
            check(*args)
        error = caught.value
        assert isinstance(error, TopologyTypeError) and isinstance(error, RpcError)
        assert error.argument == argument and str(error).startswith(f"{argument} must be ")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"names": "worker0"}, "names"),
        ({"names": 2.0}, "names"),
        ({"names": -1}, "names"),
        ({"names": 2, "device_count": "2"}, "device_count"),
        ({"names": 2, "device_count": 2.5}, "device_count"),
        ({"names": 2, "device_maps": [("worker0", "worker1")]}, "device_maps"),
        ({"names": 2, "device_maps": "worker0"}, "device_maps"),
        ({"names": 2, "devices": ["cuda:0"]}, "devices"),
        ({"names": 2, "devices": 3}, "devices"),
        ({"names": 2, "static_group": "yes"}, "static_group"),
    ],
)
def test_plan_build_with_arguments_of_the_wrong_shape_names_the_argument(kwargs: dict[str, Any], argument: str):
    with pytest.raises(TopologyTypeError) as caught:
        TopologyPlan.build(**kwargs)
    assert caught.value.argument == argument and str(caught.value).startswith(f"{argument} must be ")


@pytest.mark.parametrize("options", [{}, {"device_maps": {}}, "worker1", 3, None, [("cpu", "cpu")], object()])
def test_plan_from_options_refuses_what_is_not_rpc_backend_options(options: object) -> None:
    with pytest.raises(TopologyTypeError) as caught:
        TopologyPlan.from_options(0, options, device_count=0)
    assert caught.value.argument == "options" and "TensorPipeRpcBackendOptions" in str(caught.value)


def test_plan_from_options_takes_real_options_and_numpy_counts() -> None:
    import numpy as np
    import torch.distributed.rpc as rpc

    options = rpc.TensorPipeRpcBackendOptions(device_maps={"worker1": {"cpu": "cpu"}})
    plan = TopologyPlan.from_options(0, options, device_count=np.int64(2))
    assert plan.workers[0].device_count == 2 and plan.workers[0].device_maps == (("worker1", (("cpu", "cpu"),)),)
    with pytest.raises(TopologyTypeError, match=r"^device_count must be"):
        TopologyPlan.from_options(0, options, device_count="2")
    assert TopologyPlan.build(np.int64(2), np.int64(1)).device_counts == {"worker0": 1, "worker1": 1}


def test_a_list_of_pairs_is_a_device_map_too() -> None:
    assert check_device_maps(W, COUNTS, {"w0": {"w1": [("cuda:0", "cuda:0")]}}) == ()


@pytest.mark.parametrize("count", [2**31 - 1, MAX_DEVICE_COUNT + 1, -1, {"cuda": 10**12}, {"xpu": -3}])
def test_absurd_device_counts_are_refused_with_the_limit_and_never_materialised(count: object) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(DeviceCountError) as caught:
            validate_device_maps(W, {"w0": count, "w1": 1}, {"w0": {"w1": {"cuda:0": "cuda:0"}}})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing the size of the count was built
    error = caught.value
    assert isinstance(error, ValueError) and error.worker == "w0" and error.limit == MAX_DEVICE_COUNT
    assert f"limit = 0 .. {MAX_DEVICE_COUNT}" in str(error) and "next step = " in str(error)
    headline = str(error).split("\n")[0]
    assert f"for worker 'w0' is outside 0 .. {MAX_DEVICE_COUNT}, the counts torch can index." in headline


def test_a_count_too_long_to_print_is_described_not_printed() -> None:
    with pytest.raises(DeviceCountError) as caught:
        validate_device_maps(W, {"w0": 10**5000, "w1": 1})
    assert str(caught.value).startswith("Device count <an integer of about 5,001 digits> for worker 'w0' is outside")


def test_values_in_messages_are_shortened() -> None:
    deep: Any = "cpu"
    for _ in range(900):
        deep = [deep]
    with pytest.raises(PlanError) as caught:
        WorkerPlan.build("a", 1, (), {"b": {"cpu": deep}})
    assert caught.value.one_line.startswith("Invalid plan at worker 'a'.device_maps['b']: Invalid device [[[[")
    assert len(caught.value.one_line) < 300
    with pytest.raises(PlanError) as caught:
        WorkerPlan.build("a", 1, (), {"b" * 5000: {"cpu": "gpu:0"}})
    assert len(caught.value.one_line) < 300
    with pytest.raises(TopologyTypeError) as typed:
        validate_device_maps(["x" * 5000], {"x" * 5000: 0}, {"x" * 5000: 3})
    assert len(str(typed.value)) < 300


def test_the_largest_count_torch_can_index_is_accepted() -> None:
    validate_device_maps(W, {"w0": MAX_DEVICE_COUNT, "w1": 1}, {"w0": {"w1": {"cuda:127": "cuda:0"}}})


def test_a_plan_with_an_absurd_count_is_a_plan_error_naming_the_worker() -> None:
    with pytest.raises(PlanError, match=r"Invalid plan at worker 'a': Device count 2147483647 for worker 'a'"):
        TopologyPlan.from_json('{"workers": [{"name": "a", "device_count": 2147483647}]}')
    with pytest.raises(DeviceCountError):  # a record built by hand is checked when the plan is built
        TopologyPlan((WorkerPlan("a", 2**31 - 1),))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["cpu", "cuda:0", "cuda:1", "w0", "w1", "cuda"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["w0", "w1", "cpu", "cuda:0"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values, json_values, json_values, st.booleans())
def test_any_input_gives_a_verdict_or_an_rpc_error_never_a_crash(
    names: Any, counts: Any, maps: Any, devices: Any, static: bool
) -> None:
    for check in (validate_device_maps, check_device_maps, preflight_warnings):
        try:
            check(names, counts, maps, devices, static)
        except RpcError as exc:
            assert isinstance(exc, (TypeError, ValueError, KeyError))


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_value_is_a_plan_or_a_plan_error(data: Any) -> None:
    with contextlib.suppress(PlanError):
        TopologyPlan.from_dict(data)
    workers = {"workers": [{"name": "a", "device_count": data}, {"name": "b", "devices": data, "device_maps": data}]}
    with contextlib.suppress(PlanError):
        TopologyPlan.from_dict(workers)
