"""What one rank sends to a gather (bounded JSON in a versioned envelope), the check on receipt, and ``gather``
outside a job."""

from __future__ import annotations

import contextlib
import json

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import inspector.rpc as irpc
from inspector._job_records import MAX_TEXT, RecordProblem
from inspector.dispatch import torch_sdpa
from inspector.loader import profile_loader
from inspector.rpc._gather import _view
from inspector.rpc._job_payload import MAX_PAYLOAD_BYTES, decode, encode
from tests.rpc.job_records_made import environment, group, loader, sdpa


def test_a_payload_round_trips_and_says_which_rank_sent_it() -> None:
    records = [environment(), sdpa(), loader()]
    assert decode(encode(1, 3, records), 1, 3) == {r["kind"]: r for r in records}
    with pytest.raises(RecordProblem, match="says rank 1 of 3, but came from rank 2 of 3"):
        decode(encode(1, 3, records), 2, 3)


def test_an_sdpa_record_too_large_for_the_bound_is_folded_into_its_counts() -> None:
    long = "x" * MAX_TEXT
    groups = [
        group(
            count=64 - i,
            shapes=f"{i}{long}"[:MAX_TEXT],
            module=long,
            mask=long,
            enabled=long,
            dtype=long,
            answered_by=long,
            backend=long,
        )
        for i in range(64)
    ]  # every string as long as a record allows
    data = encode(0, 1, [environment(), sdpa(*groups)])
    assert len(data) <= MAX_PAYLOAD_BYTES
    received = decode(data, 0, 1)["torch_sdpa.watch"]
    kept = len(received["groups"])
    assert 0 < kept < 64 and received["folded_groups"] == 64 - kept
    assert received["folded_calls"] == sum(64 - i for i in range(kept, 64))  # the least-called went first
    assert received["seen"] == sum(g["count"] for g in groups)


def envelope(**fields: object) -> bytes:
    return json.dumps(
        {"format": "inspector.job", "version": 1, "rank": 0, "world_size": 1, "records": [], **fields}
    ).encode()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\xff\xfe", "is not JSON"),
        (b'{"format": "inspector.job", "version": 1, "rank": NaN}', "holds NaN"),
        (b"[" * 5000 + b"]" * 5000, "nests deeper|is not JSON"),
        (b'{"format": "inspector.job", "format": "x"}', "gives a key twice"),
        (b'{"format": "pickle"}', "is not an inspector.job envelope"),
        (json.dumps({"format": "inspector.job", "version": 2}).encode(), "this inspector reads 1"),
        (envelope(code="import os"), "has fields"),
        (envelope(rank=True), "says rank"),
        (envelope(records=[environment(), environment()]), "second environment record"),
        (b" " * (MAX_PAYLOAD_BYTES + 1), "more than the"),
    ],
)
def test_hostile_bytes_are_refused_saying_why(data, why) -> None:
    with pytest.raises(RecordProblem, match=why):
        decode(data, 0, 1)


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=300)
    | st.builds(
        lambda r: json.dumps(r).encode(),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda c: (
                st.lists(c, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["format", "version", "rank", "world_size", "records", "kind", "x"]), c, max_size=5
                )
            ),
            max_leaves=20,
        ),
    )
)
def test_any_bytes_are_either_records_or_a_refusal(data) -> None:
    with contextlib.suppress(RecordProblem):
        decode(data, 0, 1)


def test_rank_0_refuses_one_ranks_bytes_names_it_and_compares_the_others() -> None:
    good = encode(0, 3, [environment(), sdpa()])
    received = [(len(good), good), (11, b"not json!!!"), (MAX_PAYLOAD_BYTES + 5, b"")]
    view = _view(3, received, "test")
    assert view.ranks == (0,)
    assert view.refused[1].startswith("payload: is not JSON")
    claims = f"claims {MAX_PAYLOAD_BYTES + 5:,} bytes; a payload holds 1 .. {MAX_PAYLOAD_BYTES:,}"
    assert view.refused[2] == (
        f"payload: {claims}, so that rank does not run this inspector's gather: run one inspector version on every rank"
    )


def test_outside_a_job_gather_returns_this_process_alone_and_keeps_it(monkeypatch) -> None:
    for name in ("WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    q = torch.randn(1, 2, 8, 4)
    with torch_sdpa.watch() as calls:
        F.scaled_dot_product_attention(q, q, q)
    profile = profile_loader([torch.ones(2)] * 6, batches=3, warmup=0)
    view = irpc.gather(calls, profile)
    assert view is irpc.last_gather()
    assert (view.world_size, view.ranks, view.how) == (1, (0,), "one process, not in a job")
    assert view.sdpa.signatures[0].calls == ((0, 1),) and view.loader.records[0]["batches"] == 3
    assert view.environment.values[0]["torch"] == torch.__version__
    assert irpc.gather(calls.job_record()).sdpa is not None  # a record works as well as the result


def test_gather_refuses_what_it_cannot_send_before_meeting_anyone() -> None:
    with pytest.raises(TypeError, match=r"gather takes the `calls` of `with torch_sdpa\.watch"):
        irpc.gather(torch.ones(2))
    with pytest.raises(ValueError, match=r"one result of each kind; loader\.profile was given twice"):
        irpc.gather(loader(), loader())
    with pytest.raises(ValueError, match="environment \\(gather adds it itself\\) was given twice"):
        irpc.gather(environment())
    with pytest.raises(ValueError, match=r"does not fit its schema: record\.seen"):
        irpc.gather({**sdpa(), "seen": -1})
    for timeout in (0, -1, float("nan"), float("inf"), True, "60", 10**400):
        with pytest.raises(ValueError, match="timeout must be a positive, finite number of seconds"):
            irpc.gather(timeout=timeout)


@pytest.mark.cuda
def test_on_a_gpu_the_environment_names_the_gpu_its_capability_and_cudnn() -> None:
    from inspector.rpc._job_environment import environment_record

    for index in reversed(range(torch.cuda.device_count())):  # the current device, whichever it is (not GPU 0)
        with torch.cuda.device(index):
            values = environment_record()["values"]
        major, minor = torch.cuda.get_device_capability(index)
        assert values["GPU"] == torch.cuda.get_device_name(index), index
        assert values["GPU capability"] == f"sm{major}{minor}", index
        assert values["GPUs"] == torch.cuda.device_count() and values["CUDA"] == torch.version.cuda
        assert values["cuDNN"] == torch.backends.cudnn.version()


@pytest.mark.parametrize(
    ("variables", "found", "why"),
    [
        (
            {"WORLD_SIZE": "3"},
            "WORLD_SIZE='3', RANK unset, MASTER_ADDR unset, MASTER_PORT unset",
            "RANK and MASTER_ADDR and MASTER_PORT are not set",
        ),
        (
            {"WORLD_SIZE": "3", "RANK": "1", "MASTER_ADDR": "10.0.0.7"},
            "WORLD_SIZE='3', RANK='1', MASTER_ADDR='10.0.0.7', MASTER_PORT unset",
            "MASTER_PORT is not set",
        ),
        ({"WORLD_SIZE": "three"}, "WORLD_SIZE='three'", "WORLD_SIZE must be a whole number, got 'three'"),
        (
            {"WORLD_SIZE": "3", "RANK": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"},
            "RANK='5'",
            "rank 5 is outside 0 .. 2 for world_size 3",
        ),
    ],
)
def test_job_variables_without_a_job_name_what_was_found_and_both_ways_out(monkeypatch, variables, found, why) -> None:
    for name in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(irpc.RendezvousConfigError) as caught:
        irpc.gather(timeout=5)
    message = str(caught.value)
    assert message.startswith("gather found job variables (") and found in message.splitlines()[0]
    assert message.splitlines()[0].endswith(why)
    assert "no process group in this process and no job started by inspector.rpc.init_rpc" in message
    assert (
        "next step = in a torchrun or DDP job, call torch.distributed.init_process_group(...) on every rank "
        "before gather; in an RPC job, start it with inspector.rpc.init_rpc(...)"
    ) in message


@pytest.mark.slow
def test_a_second_gather_while_one_runs_is_refused_at_once_and_the_first_still_names_the_missing_rank(
    monkeypatch,
) -> None:
    import threading

    from waiting import WAIT_S, wait_until

    from inspector.rpc import _gather, _job_state
    from tests.rpc.test_rpc_job import free_port

    monkeypatch.setattr(_job_state, "_last_rendezvous", [])
    for name, value in {
        "WORLD_SIZE": "2",
        "RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }.items():
        monkeypatch.setenv(name, value)
    first: list[BaseException] = []

    def run() -> None:
        try:
            irpc.gather(timeout=6)
        except BaseException as exc:
            first.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_until(lambda: _gather._running.locked() or not thread.is_alive(), what="the first gather to start")
        with pytest.raises(irpc.GatherUsageError, match=r"^gather is already running in this process") as caught:
            irpc.gather(timeout=6)
        assert "next step = call gather from one thread, once at the same point on every rank" in str(caught.value)
    finally:
        thread.join(WAIT_S)
    assert not thread.is_alive()
    (error,) = first
    assert isinstance(error, irpc.JobGatherError) and error.missing == [1] and error.arrived == [0]
    assert not _gather._running.locked()


def test_gather_takes_the_whole_jobs_group_and_refuses_any_other(monkeypatch) -> None:
    import torch.distributed as dist

    for name in ("WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(irpc.GatherUsageError, match=r"and this process was given a subgroup \(a group\)\."):
        irpc.gather(group=object())
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert irpc.gather(group=dist.group.WORLD).how == "one rank"
        with pytest.raises(
            irpc.GatherUsageError,
            match=r"rank 0 of 1 was given a subgroup \(a group that is not "
            r"this job's",
        ):
            irpc.gather(group="not a group")
    finally:
        dist.destroy_process_group()
