"""Pre-flight warnings: what torch accepts at init_rpc but that is probably a mistake."""

from __future__ import annotations

from inspector.rpc import WarningKind, preflight_warnings, validate_device_maps

W = ["worker0", "worker1"]
COUNTS = {"worker0": 2, "worker1": 2}


def kinds(maps: dict, devices: dict | None = None, static: bool = True) -> list[tuple[str, str, str | None]]:
    return [(w.kind, w.worker, w.target) for w in preflight_warnings(W, COUNTS, maps, devices, static)]


def test_a_map_keyed_by_its_own_worker_is_accepted_by_torch_but_warned_about() -> None:
    maps = {"worker0": {"worker0": {"cuda:0": "cuda:1"}}}
    validate_device_maps(W, COUNTS, maps)
    assert kinds(maps) == [(WarningKind.SELF_MAP, "worker0", "worker0")]
    (warning,) = preflight_warnings(W, COUNTS, maps)
    assert "keyed by the callee" in warning.message and [str(d) for d in warning.devices] == ["cuda:0"]


def test_maps_to_workers_not_yet_joined_in_a_dynamic_group() -> None:
    maps = {"worker0": {"worker7": {"cpu": "cuda:0"}}}
    assert kinds(maps, static=False) == [(WarningKind.TARGET_NOT_JOINED, "worker0", "worker7")]
    assert kinds(maps, static=True) == []  # a static group refuses it outright (UNKNOWN_TARGET_NAME)
    (warning,) = preflight_warnings(W, COUNTS, maps, None, False)
    assert "store timeout" in warning.message


def test_cpu_with_an_index_is_not_cpu() -> None:
    assert kinds({"worker0": {"worker1": {"cpu:0": "cpu"}}, "worker1": {"worker0": {}}}) == [
        (WarningKind.INDEXED_CPU, "worker0", "worker1")
    ]


def test_index_less_cuda_in_maps_and_device_lists() -> None:
    found = kinds({"worker0": {"worker1": {"cuda": "cuda:0"}}, "worker1": {"worker0": {}}}, {"worker1": ["cuda"]})
    assert found == [(WarningKind.INDEXLESS_CUDA, "worker0", "worker1"), (WarningKind.INDEXLESS_CUDA, "worker1", None)]


def test_cpu_inside_an_explicit_device_list() -> None:
    (warning,) = preflight_warnings(W, COUNTS, {}, {"worker1": ["cuda:0", "cpu"]})
    assert (warning.kind, warning.worker, [str(d) for d in warning.devices]) == (
        WarningKind.NON_CUDA_IN_DEVICE_LIST,
        "worker1",
        ["cpu"],
    )
    assert "only CUDA devices" in warning.message


def test_a_cpu_to_cpu_pair_does_nothing_and_is_warned_about() -> None:
    maps = {"worker0": {"worker1": {"cuda:0": "cuda:1", "cpu": "cpu"}}, "worker1": {"worker0": {"cuda:1": "cuda:0"}}}
    validate_device_maps(W, COUNTS, maps)
    (warning,) = preflight_warnings(W, COUNTS, maps)
    assert (warning.kind, warning.worker, warning.target, [str(d) for d in warning.devices]) == (
        WarningKind.CPU_PAIR,
        "worker0",
        "worker1",
        ["cpu"],
    )
    assert "torch drops" in warning.message and "Remove the pair" in warning.message


def test_gpu_maps_one_way_only_are_asymmetric() -> None:
    maps = {"worker0": {"worker1": {"cuda:0": "cuda:1", "cuda:1": "cuda:0"}}}
    (warning,) = preflight_warnings(W, COUNTS, maps)
    assert (warning.kind, warning.worker, warning.target) == (WarningKind.ASYMMETRIC_MAP, "worker0", "worker1")
    assert [str(d) for d in warning.devices] == ["cuda:0", "cuda:1"]
    assert "worker1's own calls to worker0 can carry only CPU tensors" in warning.message
    assert kinds({**maps, "worker1": {"worker0": {"cuda:1": "cuda:0"}}}) == []  # a map back, any map back
    assert kinds({"worker0": {"worker1": {"cpu": "cuda:0"}}}) == []  # only CPU tensors travel: nothing to warn


def test_a_clean_topology_has_no_warnings() -> None:
    maps = {"worker0": {"worker1": {"cuda:0": "cuda:1"}}, "worker1": {"worker0": {"cuda:1": "cuda:0"}}}
    assert kinds(maps) == []
