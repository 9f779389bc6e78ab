"""Topology plans: building, the JSON format, derived devices, and what init_rpc would raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.rpc import DeviceMapError, PlanError, TopologyPlan, WorkerPlan, predict_init_error

device = st.sampled_from(["cpu", "cpu:0", "cuda", "cuda:0", "cuda:1", "cuda:7", "meta"])


@st.composite
def plans(draw: st.DrawFn) -> TopologyPlan:
    names = [f"w{i}" for i in range(draw(st.integers(1, 4)))]
    workers = []
    for name in names:
        targets = draw(st.lists(st.sampled_from([*names, "ghost"]), unique=True, max_size=3))
        maps = {t: draw(st.dictionaries(device, device, max_size=3)) for t in targets}
        count = draw(st.integers(0, 8) | st.builds(lambda n: {"cuda": n}, st.integers(0, 8)))
        workers.append(WorkerPlan.build(name, count, draw(st.lists(device, max_size=2)), maps))
    return TopologyPlan(tuple(workers), draw(st.booleans()))


@given(plans())
def test_json_round_trip_keeps_the_plan_and_its_verdict(plan: TopologyPlan) -> None:
    again = TopologyPlan.from_json(plan.to_json())
    assert again == plan
    assert again.check() == plan.check()


def test_build_names_workers_and_applies_one_count_to_all() -> None:
    plan = TopologyPlan.build(3, 8, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}})
    assert plan.names == ["worker0", "worker1", "worker2"]
    assert plan.device_counts == {"worker0": 8, "worker1": 8, "worker2": 8}
    assert plan.device_maps["worker0"] == {"worker1": {"cuda:0": "cuda:1"}} and plan.device_maps["worker2"] == {}


def test_build_takes_counts_per_worker_or_per_device_type() -> None:
    assert TopologyPlan.build(["a", "b"], {"a": 2, "b": {"cuda": 4}}).device_counts == {"a": 2, "b": 4}
    assert TopologyPlan.build(["a"], {"cuda": 4}).device_counts == {"a": 4}


def test_the_json_format_is_readable_and_ordered() -> None:
    plan = TopologyPlan.build(2, 2, {"worker0": {"worker1": {"cuda:1": "cuda:0", "cuda:0": "cuda:1"}}})
    data = json.loads(plan.to_json())
    assert data["format"] == "inspector.rpc.plan" and data["version"] == 1 and data["static_group"] is True
    assert data["workers"][0] == {
        "name": "worker0",
        "device_count": 2,
        "devices": [],
        "device_maps": {"worker1": {"cuda:1": "cuda:0", "cuda:0": "cuda:1"}},
    }
    assert list(data["workers"][0]["device_maps"]["worker1"]) == ["cuda:1", "cuda:0"]


def test_a_minimal_plan_file_needs_only_names() -> None:
    plan = TopologyPlan.from_json('{"workers": [{"name": "a"}, {"name": "b", "device_count": {"cuda": 2}}]}')
    assert plan.device_counts == {"a": 0, "b": 2} and plan.static_group


@pytest.mark.parametrize(
    ("text", "path", "fragment"),
    [
        ("[1]", "<root>", "a list, not an object"),
        ('{"workers": 3}', "workers", "missing or not a list"),
        ('{"format": "other", "workers": []}', "format", "'other'"),
        ('{"workers": [{"nom": "a"}]}', "workers[0]", "string 'name'"),
        ('{"workers": [{"name": "a", "gpus": 2}]}', "workers[0]", "unknown keys ['gpus']"),
        ('{"workers": [{"name": "a", "device_maps": {"b": 1}}]}', "workers[0].device_maps", "object of objects"),
        ('{"workers": [{"name": "a", "devices": ["gpu:0"]}]}', "worker 'a'", "unknown device type 'gpu'"),
        ('{"workers": [{"name": "a"}, {"name": "a"}]}', "workers", "['a'] appear more than once"),
        ('{"workers": [', "line 1 column 14", "Expecting value"),
    ],
)
def test_invalid_plan_files_name_the_offending_entry(text: str, path: str, fragment: str) -> None:
    with pytest.raises(PlanError) as caught:
        TopologyPlan.from_json(text)
    assert caught.value.path == path and fragment in str(caught.value)


@pytest.mark.parametrize("name", ["bad name", "w" * 128, "w" * 300, "", "worker.0", "wörker", "a\n"])
def test_a_worker_name_torch_refuses_cannot_be_planned_and_says_so_in_torchs_words(name: str) -> None:
    import torch.distributed.rpc as torch_rpc

    with pytest.raises(RuntimeError) as torch_refusal:  # the rule is torch's: its WorkerInfo refuses the name
        torch_rpc.WorkerInfo(name, 0)
    words = str(torch_refusal.value).partition(", but got")[0]
    for build in (
        lambda: TopologyPlan.build(["worker0", name]),
        lambda: TopologyPlan.from_dict({"workers": [{"name": "worker0"}, {"name": name}]}),
    ):
        with pytest.raises(PlanError) as caught:
            build()
        assert caught.value.path == "workers[1].name"
        assert caught.value.problem.startswith(f"{words}, but got {repr(name)[:20]}")
        assert len(caught.value.one_line) < 300


@pytest.mark.parametrize("name", ["w" * 127, "a-b_c:1", "0", "TRAINER-3"])
def test_a_worker_name_torch_accepts_can_be_planned(name: str) -> None:
    import torch.distributed.rpc as torch_rpc

    torch_rpc.WorkerInfo(name, 0)
    assert TopologyPlan.build([name]).names == [name]


def test_one_source_to_two_targets_cannot_be_planned() -> None:
    with pytest.raises(PlanError, match="cuda:0 is mapped to both cuda:1 and cuda:2"):
        WorkerPlan.build("a", 2, (), {"b": [("cuda:0", "cuda:1"), ("cuda:0", "cuda:2")]})


def test_full_mesh_of_64_workers_with_8_gpus_passes_and_a_one_gpu_worker_does_not() -> None:
    plan = TopologyPlan.full_mesh(64, 8)
    assert len(plan.workers) == 64 and plan.check() == ()
    plan.validate()
    short = TopologyPlan.build(plan.names, {**plan.device_counts, "worker5": 1}, plan.device_maps)
    with pytest.raises(DeviceMapError, match=r"Node worker0 has target devices with invalid indices .* for worker5"):
        short.validate()


def test_derive_gives_each_workers_reverse_maps_and_device_list() -> None:
    plan = TopologyPlan.build(2, 2, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}})
    first, second = plan.derive()
    assert [str(d) for d in first.device_list] == ["cuda:0"] and first.reverse_device_maps == {}
    assert [str(d) for d in second.device_list] == ["cuda:1"]
    assert {str(k): str(v) for k, v in second.reverse_device_maps["worker0"].items()} == {"cuda:1": "cuda:0"}


def test_derive_reports_an_unsortable_device_list_as_a_problem() -> None:
    (derived,) = TopologyPlan.build(["a"], 1, devices={"a": ["cuda:0", "cpu"]}).derive()
    assert derived.problem is not None and derived.problem.category == "UNSORTABLE_DEVICE_LIST"


def test_cpu_only_drops_every_pair_touching_an_accelerator() -> None:
    maps = {"worker0": {"worker1": {"cuda:0": "cuda:1", "cpu": "cpu"}, "worker0": {"cuda:1": "cpu"}}}
    plan = TopologyPlan.build(2, 2, maps, devices={"worker0": ["cuda:0"]})
    cpu, dropped = plan.cpu_only()
    assert dropped == 2 and cpu.device_maps["worker0"] == {"worker1": {"cpu": "cpu"}} and cpu.devices["worker0"] == []


def test_every_rank_of_a_static_group_raises_torchs_validation_error() -> None:
    plan = TopologyPlan.build(2, 0, {"worker0": {"worker1": {"cuda:0": "cuda:1"}}})
    error = predict_init_error(plan)
    assert error is not None and (error.stage, error.worker, error.exception) == ("validation", "worker0", "ValueError")
    assert error.raised_by == ("worker0", "worker1")
    assert error.text == (
        "ValueError: Node worker0 has source devices with invalid indices in its device map for worker1\n"
        "device map = {device(type='cuda', index=0): device(type='cuda', index=1)}\ndevice count = 0"
    )


def test_building_options_fails_first_on_one_rank_for_many_to_one_maps() -> None:
    plan = TopologyPlan.build(2, 2, {"worker1": {"worker0": {"cuda:0": "cuda:1", "cuda:1": "cuda:1"}}})
    error = predict_init_error(plan)
    assert error is not None and (error.stage, error.worker, error.raised_by) == ("options", "worker1", ("worker1",))
    assert error.message == "`device_map` only supports 1-to-1 mapping, trying to map cuda:1 and cuda:0 to cuda:1"
    assert "wait in rendezvous" in error.note


def test_building_options_refuses_cpu_in_devices() -> None:
    error = predict_init_error(TopologyPlan.build(2, 2, devices={"worker0": ["cpu"]}))
    assert error is not None and error.message == (
        "`set_devices` expect a list of CUDA devices, but got device type cpu."
    )


def test_a_dynamic_group_fails_at_the_first_join_whose_check_fails() -> None:
    maps = {"worker0": {"worker2": {"cuda:0": "cuda:5"}}}
    plan = TopologyPlan.build(3, 2, maps, static_group=False)
    error = predict_init_error(plan)
    assert error is not None and (error.stage, error.worker, error.raised_by) == ("join", "worker0", ("worker2",))
    assert "DistStoreError" in error.note


def test_a_valid_plan_predicts_no_error() -> None:
    assert predict_init_error(TopologyPlan.full_mesh(4, 8)) is None
    assert predict_init_error(TopologyPlan.full_mesh(4, 8, static_group=False)) is None


# -- parsed once --------------------------------------------------------------------------------
def test_checks_predictions_and_derivation_read_the_parsed_topology_and_never_parse_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inspector.rpc import _devices, _topology

    plan = TopologyPlan.build(3, 1, {"worker0": {"worker1": {"cuda:0": "cuda:3"}, "ghost": {"cpu": "cpu"}}})
    calls: list[str] = []

    def counted(name: str, fn):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(name)
            return fn(*args, **kwargs)

        return wrapper

    for module in (_devices, _topology):
        for name in ("as_device", "as_device_map", "normalize", "_parse"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, counted(name, getattr(module, name)))
    for _ in range(3):  # what the RPC tab shows on every keystroke
        plan.check(), plan.preflight(), predict_init_error(plan), plan.derive()
        with pytest.raises(DeviceMapError):
            plan.validate()
    assert calls == []


def test_the_parsed_topology_is_read_only() -> None:
    topo = TopologyPlan.full_mesh(2, 2).topology
    assert isinstance(topo.names, tuple)
    with pytest.raises(TypeError):
        topo.counts["worker0"] = 9  # type: ignore[index]
    with pytest.raises(TypeError):
        topo.maps["worker0"]["worker1"][next(iter(topo.maps["worker0"]["worker1"]))] = None  # type: ignore[index]
    assert isinstance(topo.devices["worker0"], tuple)


def test_plans_compare_by_their_workers_not_by_the_parsed_copy() -> None:
    assert TopologyPlan.full_mesh(3, 2) == TopologyPlan.full_mesh(3, 2)
    assert hash(TopologyPlan.full_mesh(3, 2)) == hash(TopologyPlan.full_mesh(3, 2))
    assert "topology" not in repr(TopologyPlan.build(1))


# -- templates -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("plan", "names", "pairs"),
    [
        (TopologyPlan.full_mesh(4, 8), ["worker0", "worker1", "worker2", "worker3"], 4 * 3 * 8),
        (TopologyPlan.ring(4, 2), ["worker0", "worker1", "worker2", "worker3"], 4 * 2 * 2),
        (TopologyPlan.ring(2, 2), ["worker0", "worker1"], 2 * 1 * 2),
        (TopologyPlan.parameter_server(3, 2), ["ps", "trainer0", "trainer1", "trainer2"], 2 * 3 * 2),
    ],
)
def test_templates_are_valid_symmetric_and_warning_free(plan: TopologyPlan, names: list[str], pairs: int) -> None:
    assert plan.names == names and plan.pair_count == pairs
    assert plan.check() == () and plan.preflight() == () and predict_init_error(plan) is None


def test_a_ring_maps_each_worker_to_its_two_neighbours() -> None:
    maps = TopologyPlan.ring(4, 1).device_maps
    assert {w: sorted(m) for w, m in maps.items()} == {
        "worker0": ["worker1", "worker3"],
        "worker1": ["worker0", "worker2"],
        "worker2": ["worker1", "worker3"],
        "worker3": ["worker0", "worker2"],
    }


def test_a_parameter_server_talks_to_every_trainer_and_trainers_only_to_it() -> None:
    maps = TopologyPlan.parameter_server(2, 1).device_maps
    assert maps == {
        "ps": {"trainer0": {"cuda:0": "cuda:0"}, "trainer1": {"cuda:0": "cuda:0"}},
        "trainer0": {"ps": {"cuda:0": "cuda:0"}},
        "trainer1": {"ps": {"cuda:0": "cuda:0"}},
    }


@pytest.mark.parametrize("workers", [0, -1, 10**6, True])
def test_templates_refuse_worker_counts_out_of_range(workers: int) -> None:
    with pytest.raises(ValueError, match=r"A template needs 1 \.\. 1024 workers"):
        TopologyPlan.ring(workers, 2)


# -- from real options ---------------------------------------------------------------------------
def test_from_options_reads_real_tensorpipe_options() -> None:
    from torch.distributed.rpc import TensorPipeRpcBackendOptions

    options = TensorPipeRpcBackendOptions(
        device_maps={"worker1": {"cuda:0": "cuda:1", "cuda:1": "cuda:0"}}, devices=["cuda:0", "cuda:1"]
    )
    plan = TopologyPlan.from_options("trainer", options, device_count=2)
    (worker,) = plan.workers
    assert (worker.name, worker.device_count, worker.devices) == ("trainer", 2, ("cuda:0", "cuda:1"))
    assert worker.maps_dict() == {"worker1": {"cuda:0": "cuda:1", "cuda:1": "cuda:0"}}
    assert plan.static_group is False and plan.check() == ()  # its peers are not in it
    assert TopologyPlan.from_options(3, options, device_count={"cuda": 2}).names == ["worker3"]


def test_from_options_defaults_to_this_machines_device_count_and_takes_any_backends_options() -> None:
    import torch
    import torch.distributed.rpc as rpc

    plan = TopologyPlan.from_options("w", rpc.RpcBackendOptions())  # a backend's options without device maps
    assert plan.workers == (WorkerPlan("w", torch.cuda.device_count()),)


def rpc_options() -> object:
    import torch.distributed.rpc as rpc

    return rpc.TensorPipeRpcBackendOptions()


def test_from_options_refuses_a_name_that_is_neither_name_nor_rank() -> None:
    with pytest.raises(TypeError, match="name_or_rank must be a worker name"):
        TopologyPlan.from_options(1.5, rpc_options(), device_count=0)  # type: ignore[arg-type]


def test_combining_every_ranks_plan_gives_the_jobs_static_plan_and_its_verdict() -> None:
    from torch.distributed.rpc import TensorPipeRpcBackendOptions

    ranks = [
        TopologyPlan.from_options(0, TensorPipeRpcBackendOptions(device_maps={"worker1": {"cuda:0": "cuda:1"}}), 2),
        TopologyPlan.from_options(1, TensorPipeRpcBackendOptions(device_maps={"worker0": {"cuda:1": "cuda:0"}}), 1),
    ]
    job = TopologyPlan.combine(ranks)
    assert job.static_group and job.names == ["worker0", "worker1"]
    error = predict_init_error(job)
    assert error is not None and error.text.startswith(
        "ValueError: Node worker0 has target devices with invalid indices in its device map for worker1"
    )


def test_from_job_without_a_job_says_how_to_start_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspector.rpc import RpcError, _job_state

    monkeypatch.setattr(_job_state, "_last_plan", [])
    with pytest.raises(RpcError, match="No RPC job in this process") as caught:
        TopologyPlan.from_job()
    assert "next step = start the job with inspector.rpc.init_rpc" in str(caught.value)


def test_from_job_returns_the_plan_the_last_guarded_start_gathered(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspector.rpc import _job_state

    plan = TopologyPlan.ring(3, 1)
    monkeypatch.setattr(_job_state, "_last_plan", [plan])
    assert TopologyPlan.from_job() is plan


# -- plan files ----------------------------------------------------------------------------------
def test_from_file_reads_a_plan_and_refuses_what_is_not_a_regular_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    path = tmp_path / "plan.json"
    path.write_text(TopologyPlan.ring(3, 2).to_json())
    assert TopologyPlan.from_file(path) == TopologyPlan.ring(3, 2)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(PlanError, match="a FIFO, not a plan file"):
        TopologyPlan.from_file(tmp_path / "fifo")


def test_a_plan_file_over_the_limit_is_refused_before_it_is_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from inspector.rpc._plan_file import read_plan_text

    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2048)
    with pytest.raises(PlanError, match="2,048 bytes, over the 1,024-byte limit"):
        read_plan_text(path, limit=1024)


@pytest.mark.parametrize(("workers", "gpus"), [(1024, 128), (2, 129), (2, -1)])
def test_templates_refuse_sizes_that_would_exhaust_memory_or_torchs_indices(workers: int, gpus: int) -> None:
    with pytest.raises(ValueError, match="next step = "):
        TopologyPlan.full_mesh(workers, gpus)
