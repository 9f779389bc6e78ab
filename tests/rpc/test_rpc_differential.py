"""Our device-map functions against torch's own, on thousands of generated topologies.

torch's ``_validate_device_maps``, ``_create_reverse_mapping`` and ``_create_device_list``
are pure Python over ``torch.device`` values and ints, so they run here without a GPU and
serve as the oracle. Intended differences: where torch crashes with a TypeError we raise
``DeviceMapError`` whose ``torch_exception``/``torch_message`` carry torch's TypeError.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.distributed.rpc import backend_registry as torch_registry

from inspector.rpc import (
    DeviceMapError,
    check_device_maps,
    create_device_list,
    create_reverse_mapping,
    validate_device_maps,
)

EXAMPLES = 2000

# Mostly cpu and cuda:0-3; rarely cpu:0, index-less cuda, meta and xpu:0 (as users write them).
POOL = ["cpu"] * 4 + ["cuda:0", "cuda:1", "cuda:2", "cuda:3"] * 3 + ["cpu:0", "cuda", "meta", "xpu:0"]

TORCH_CATEGORIES = [
    (r"Node (?P<node>\S+) has duplicated devices$", "DUPLICATED_DEVICES"),
    (r"Node (?P<node>\S+) has devices with invalid indices$", "INVALID_DEVICE_INDEX"),
    (r"Node (?P<node>\S+) has invalid target node names in its device maps$", "UNKNOWN_TARGET_NAME"),
    (r"Node (?P<node>\S+) has duplicated target devices in its device map for (?P<target>\S+)$", "DUPLICATED_TARGET"),
    (r"Node (?P<node>\S+) has unexpected source devices in its device map for (?P<target>\S+)$", "UNEXPECTED_SOURCE"),
    (
        r"Node (?P<node>\S+) has source devices with invalid indices in its device map for (?P<target>\S+)$",
        "INVALID_SOURCE_INDEX",
    ),
    (r"Node (?P<node>\S+) has unexpected target devices in its device map for (?P<target>\S+)$", "UNEXPECTED_TARGET"),
    (
        r"Node (?P<node>\S+) has target devices with invalid indices in its device map for (?P<target>\S+)$",
        "INVALID_TARGET_INDEX",
    ),
]


def torch_category(message: str) -> tuple[str, str, str | None]:
    headline = message.partition("\n")[0]
    for pattern, category in TORCH_CATEGORIES:
        match = re.match(pattern, headline)
        if match:
            return category, match["node"], match.groupdict().get("target")
    raise AssertionError(f"unrecognised torch message: {message!r}")


@st.composite
def topologies(draw: st.DrawFn) -> dict[str, Any]:
    names = [f"w{i}" for i in range(draw(st.integers(1, 4)))]
    device = st.sampled_from(POOL)
    counts = {n: draw(st.integers(0, 4)) for n in names}
    devices = {n: draw(st.lists(device, max_size=3)) if draw(st.integers(0, 2)) == 0 else [] for n in names}
    maps = {}
    for n in names:
        targets = draw(st.lists(st.sampled_from([*names, *names, "ghost"]), max_size=2, unique=True))
        maps[n] = {t: draw(st.lists(st.tuples(device, device), max_size=3)) for t in targets}
    return {"names": names, "counts": counts, "devices": devices, "maps": maps, "static": draw(st.booleans())}


def as_torch(case: dict[str, Any]) -> tuple[Any, ...]:
    maps = {
        n: {t: {torch.device(s): torch.device(d) for s, d in pairs} for t, pairs in per.items()}
        for n, per in case["maps"].items()
    }
    devices = {n: [torch.device(d) for d in listed] for n, listed in case["devices"].items()}
    return case["names"], case["counts"], maps, devices


def ours_args(case: dict[str, Any]) -> tuple[Any, ...]:
    return case["names"], case["counts"], case["maps"], case["devices"]


def as_strings(mapping: dict[Any, dict[Any, Any]]) -> dict[str, dict[str, str]]:
    return {n: {str(k): str(v) for k, v in m.items()} for n, m in mapping.items()}


def by_index(devices: list[Any]) -> list[tuple[Any, set[str]]]:
    """A device list as (index, the devices at that index): torch leaves the order of ties to a set."""
    groups: dict[Any, set[str]] = {}
    for d in devices:
        groups.setdefault(d.index, set()).add(str(d))
    return list(groups.items())


def compare_accepted(case: dict[str, Any]) -> None:
    names, _, torch_maps, torch_devices = as_torch(case)
    for name in names:
        theirs = torch_registry._create_reverse_mapping(name, names, torch_maps)
        ours = create_reverse_mapping(name, names, case["maps"])
        assert as_strings(ours) == as_strings(theirs)
        try:
            their_list = torch_registry._create_device_list(torch_devices[name], torch_maps[name], theirs)
        except TypeError as exc:
            with pytest.raises(DeviceMapError) as caught:
                create_device_list(case["devices"][name], case["maps"][name], ours, worker=name)
            assert caught.value.category == "UNSORTABLE_DEVICE_LIST" and caught.value.worker == name
            assert caught.value.torch_exception == "TypeError"
            if case["devices"][name]:  # an explicit list is sorted in the order given: same comparison
                assert caught.value.torch_message == str(exc)
            continue
        our_list = create_device_list(case["devices"][name], case["maps"][name], ours, worker=name)
        assert by_index(our_list) == by_index(their_list)


def compare(case: dict[str, Any]) -> str:
    try:
        torch_registry._validate_device_maps(*as_torch(case), is_static_group=case["static"])
    except ValueError as exc:
        with pytest.raises(DeviceMapError) as caught:
            validate_device_maps(*ours_args(case), is_static_group=case["static"])
        category, node, target = torch_category(str(exc))
        ours = caught.value
        assert (ours.category, ours.worker) == (category, node)
        if target is not None:
            assert ours.target == target
        assert ours.torch_exception == "ValueError" and ours.torch_message == str(exc)
        assert str(ours).partition("\n")[0] == str(exc).partition("\n")[0]
        assert check_device_maps(*ours_args(case), is_static_group=case["static"])[0] == ours.problem
        return category
    except TypeError as exc:
        with pytest.raises(DeviceMapError) as caught:
            validate_device_maps(*ours_args(case), is_static_group=case["static"])
        assert caught.value.torch_exception == "TypeError" and caught.value.torch_message == str(exc)
        return "TypeError"
    validate_device_maps(*ours_args(case), is_static_group=case["static"])
    compare_accepted(case)
    return "ok"


def test_validation_agrees_with_torch_on_generated_topologies() -> None:
    verdicts: list[str] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(topologies())
    def agree(case: dict[str, Any]) -> None:
        verdicts.append(compare(case))

    agree()
    assert len(verdicts) >= EXAMPLES
    kinds = set(verdicts)
    # The generator reaches every verdict torch can give, so agreement is not vacuous.
    assert {
        "ok",
        "TypeError",
        "DUPLICATED_DEVICES",
        "INVALID_DEVICE_INDEX",
        "UNKNOWN_TARGET_NAME",
        "DUPLICATED_TARGET",
        "UNEXPECTED_SOURCE",
        "INVALID_SOURCE_INDEX",
        "UNEXPECTED_TARGET",
        "INVALID_TARGET_INDEX",
    } <= kinds


def test_full_mesh_of_many_workers_agrees_with_torch() -> None:
    names = [f"worker{i}" for i in range(16)]
    maps = {s: {t: [(f"cuda:{i}", f"cuda:{(i + 1) % 4}") for i in range(4)] for t in names if t != s} for s in names}
    case = {
        "names": names,
        "counts": dict.fromkeys(names, 4),
        "devices": {n: [] for n in names},
        "maps": maps,
        "static": True,
    }
    assert compare(case) == "ok"
    case["counts"]["worker9"] = 3
    assert compare(case) == "INVALID_TARGET_INDEX"  # worker0 -> worker9 is the first map torch visits
