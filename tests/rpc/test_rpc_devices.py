"""Device values: torch's grammar, torch's repr, and torch's notion of equality."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from inspector.rpc import Device, DeviceSpecError, as_device
from inspector.rpc._devices import DEVICE_TYPES, MAX_INDEX

specs = st.builds(
    lambda kind, index: kind if index is None else f"{kind}:{index}",
    st.sampled_from([t for t in DEVICE_TYPES if t != "mkldnn"]),  # torch warns that mkldnn is deprecated
    st.none() | st.integers(0, MAX_INDEX),
)


@given(specs)
def test_parsing_agrees_with_torch_device_on_valid_strings(spec: str) -> None:
    ours, theirs = as_device(spec), torch.device(spec)
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs) == spec


@given(st.text(max_size=12))
def test_parsing_rejects_what_torch_rejects(spec: str) -> None:
    try:
        torch.device(spec)
    except (RuntimeError, ValueError):
        with pytest.raises(DeviceSpecError):
            as_device(spec)


def test_torch_devices_and_ints_are_accepted() -> None:
    assert as_device(torch.device("cuda:3")) == Device("cuda", 3)
    assert as_device(torch.device("cpu")) == Device("cpu")
    assert as_device(2) == Device("cuda", 2)


def test_cpu_and_cpu_0_are_different_devices_as_in_torch() -> None:
    assert as_device("cpu") != as_device("cpu:0")
    assert (torch.device("cpu") == torch.device("cpu:0")) is False


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("cuda:-1", "not of the form"),
        ("CUDA:0", "not of the form"),
        ("gpu:0", "unknown device type 'gpu'"),
        ("cuda:01", "not of the form"),
        ("cuda:128", "above 127"),
        (-1, "within 0 .. 127"),
        (True, "bool"),
        (1.5, "float"),
    ],
)
def test_invalid_devices_raise_value_error_with_the_spec(spec: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment) as caught:
        as_device(spec)
    assert isinstance(caught.value, DeviceSpecError) and caught.value.spec == spec
    assert "types = ['cpu', 'cuda'" in str(caught.value)
