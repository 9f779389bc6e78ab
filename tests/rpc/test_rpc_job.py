"""Real jobs: ranks started as separate processes with env rendezvous on 127.0.0.1, as two nodes would.

Each rank is ``job_rank.py`` in its own interpreter (``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/
``MASTER_PORT`` set, nothing shared but the address), calling ``inspector.rpc.init_rpc``. Every
rank's process is waited on with a bound, and nothing may be left running afterwards.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inspector._processes import stop_processes

pytestmark = pytest.mark.slow

RANK_SCRIPT = Path(__file__).with_name("job_rank.py")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
RANK_WAIT_S = 240.0  # a rank imports torch on a busy 2-core machine; the join bounds are far shorter
SLACK_S = 30.0  # beyond a join bound: polling, the store host's linger and a busy machine
AT_ONCE_S = 60.0  # "at once" where the join bound is 2400 s: the failing rank's start-up, and slack


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_job(
    modes: list[str], join_timeout: float | None, extra_env: dict[str, str] | None = None
) -> list[tuple[dict[str, Any], str]]:
    """Start one process per mode (rank = position), wait for all (bounded); each rank's JSON and stderr.

    ``join_timeout=None`` passes none to ``init_rpc``: the ranks' environment (``extra_env``) decides.
    """
    env = {
        **{key: value for key, value in os.environ.items() if key != "INSPECTOR_RPC_JOIN_TIMEOUT"},
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(len(modes)),
        "GLOO_SOCKET_IFNAME": "lo",
        "TP_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")])),
        **(extra_env or {}),
    }
    if join_timeout is not None:
        env["JOB_JOIN_TIMEOUT"] = str(join_timeout)
    procs = [
        subprocess.Popen(
            [sys.executable, str(RANK_SCRIPT), mode],
            env={**env, "RANK": str(rank)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank, mode in enumerate(modes)
    ]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=RANK_WAIT_S)
            lines = out.strip().splitlines()
            assert lines, f"rank {procs.index(proc)} printed nothing:\n{err[-3000:]}"
            results.append((json.loads(lines[-1]), err))
    finally:
        stop_processes(procs, 5.0)
    return results


def test_a_rank_that_dies_before_rpc_is_named_by_every_other_rank_within_the_join_timeout(new_processes) -> None:
    # the bound must exceed how far apart the two live ranks finish importing torch on a busy machine
    (first, first_err), (died, _), (third, _) = run_job(["ok", "die", "ok"], join_timeout=20.0)
    assert died == {"rank": 1, "outcome": "died"}
    for result in (first, third):
        assert result["outcome"] == "error", result
        assert result["exception"] == "RpcJoinError" and result["rpc_error"]
        assert result["missing"] == [1] and result["address"].startswith("127.0.0.1:")
        assert result["message"].startswith(
            f"RPC join timed out after 20 s: ranks [1] never arrived at {result['address']}"
        )
        assert result["seconds"] <= 20.0 + SLACK_S, result
    waiting = rf"rank 0 \(worker0\) waiting for ranks \[1\] \(\d+ s of 20 s\) at {re.escape(first['address'])}"
    assert re.search(waiting, first_err), first_err[-3000:]
    assert new_processes() == []


def test_a_rank_failing_its_local_checks_is_reported_by_every_rank_at_once(new_processes) -> None:
    # a join timeout far beyond the rank wait: only the published failure can end the others' wait
    results = run_job(["ok", "bad-device", "ok"], join_timeout=RANK_WAIT_S * 10)
    (first, _), (failed, _), (third, _) = results
    assert failed["exception"] == "DeviceMapError"
    assert failed["message"].startswith("Node worker1 has devices with invalid indices")
    for result in (first, third):
        assert (result["exception"], result["failed_rank"], result["failed_name"]) == ("RankFailedError", 1, "worker1")
        assert result["message"].startswith(
            "Rank 1 (worker1) failed before joining the RPC job: DeviceMapError: "
            "Node worker1 has devices with invalid indices"
        )
        assert result["seconds"] <= AT_ONCE_S, result
    assert new_processes() == []


def test_the_join_timeout_can_come_from_the_environment_alone(new_processes) -> None:
    (first, first_err), (died, _) = run_job(["ok", "die"], None, {"INSPECTOR_RPC_JOIN_TIMEOUT": "6"})
    assert died["outcome"] == "died"
    assert (first["exception"], first["missing"]) == ("RpcJoinError", [1])
    assert first["message"].startswith("RPC join timed out after 6 s: ranks [1] never arrived")
    assert 6.0 <= first["seconds"] <= 6.0 + SLACK_S, first  # the variable's bound, not the 300 s default
    assert re.search(r"waiting for ranks \[1\] \(\d+ s of 6 s\)", first_err), first_err[-3000:]
    assert new_processes() == []


def test_a_rank_whose_join_timeout_variable_is_invalid_still_tells_the_others_at_once(new_processes) -> None:
    (first, _), (bad, _), (third, _) = run_job(["ok", "bad-timeout", "ok"], join_timeout=RANK_WAIT_S * 10)
    assert bad["exception"] == "RendezvousConfigError"
    assert bad["message"].startswith("INSPECTOR_RPC_JOIN_TIMEOUT must be a positive number of seconds, got 'abc'")
    for result in (first, third):
        assert (result["exception"], result["failed_rank"], result["failed_name"]) == ("RankFailedError", 1, "worker1")
        assert (
            "RendezvousConfigError: INSPECTOR_RPC_JOIN_TIMEOUT must be a positive number of seconds, got 'abc'"
            in (result["message"])
        )
        assert result["seconds"] <= AT_ONCE_S, result
    assert new_processes() == []


@pytest.mark.parametrize("modes", [["ok", "bigger-world"], ["bigger-world", "ok"]], ids=["rank 1", "rank 0"])
def test_ranks_that_disagree_on_the_world_size_all_raise_the_same_error_at_once(modes, new_processes) -> None:
    # the rank given the smaller world sees "everyone arrived" first: it must not go on to torch's rendezvous
    results = run_job(modes, join_timeout=RANK_WAIT_S * 10)
    (first, _), (second, _) = results
    for result, err in results:
        assert result.get("exception") == "RendezvousConfigError", (result, err[-3000:])
        assert result["seconds"] <= AT_ONCE_S, result
    assert first["message"] == second["message"]
    assert re.match(r"The ranks at 127\.0\.0\.1:\d+ disagree on the world size: ", first["message"]), first
    for rank, mode in enumerate(modes):
        assert f"ranks [{rank}] (worker{rank}) say {3 if mode == 'bigger-world' else 2}" in first["message"]
    assert "next step = give every process the same WORLD_SIZE" in first["message"]
    assert new_processes() == []


def test_a_join_timeout_of_1e308_seconds_is_a_bound_like_any_other(new_processes) -> None:
    results = run_job(["ok", "ok"], join_timeout=1e308)
    for result, err in results:
        assert result["outcome"] == "ok", (result, err[-3000:])
    assert new_processes() == []


def test_a_join_timeout_too_large_for_a_float_is_that_ranks_config_error_told_to_every_rank(new_processes) -> None:
    (first, _), (bad, _) = run_job(["ok", "int-timeout"], join_timeout=RANK_WAIT_S * 10)
    assert bad["exception"] == "RendezvousConfigError"
    assert bad["message"].startswith("join_timeout is too large to be a number of seconds")
    assert (first["exception"], first["failed_rank"]) == ("RankFailedError", 1)
    assert "RendezvousConfigError: join_timeout is too large" in first["message"]
    assert first["seconds"] <= AT_ONCE_S and bad["seconds"] <= AT_ONCE_S, (first, bad)
    assert new_processes() == []


def test_rank_0_failing_keeps_the_store_up_until_the_others_know(new_processes) -> None:
    (host, _), (other, _) = run_job(["bad-backend", "ok"], join_timeout=RANK_WAIT_S * 10)
    assert host["exception"] == "UnknownRpcBackendError"
    assert (other["exception"], other["failed_rank"]) == ("RankFailedError", 0)
    assert other["seconds"] <= AT_ONCE_S and host["seconds"] <= AT_ONCE_S, (host, other)
    assert "UnknownRpcBackendError: Unknown RPC backend 'NO_SUCH_BACKEND'. Known: ['TENSORPIPE']" in other["message"]
    assert new_processes() == []


def test_gathered_options_torch_would_refuse_raise_the_same_report_on_every_rank(new_processes) -> None:
    (first, _), (second, _) = run_job(["ghost-map", "ok"], join_timeout=RANK_WAIT_S * 10)
    assert first["exception"] == second["exception"] == "JobTopologyError"
    assert first["message"] == second["message"]
    assert first["seconds"] <= AT_ONCE_S and second["seconds"] <= AT_ONCE_S, (first, second)
    assert "init_rpc would raise = ValueError: Node worker0 has invalid target node names" in first["message"]
    assert new_processes() == []


def test_a_good_three_rank_job_calls_across_ranks_knows_its_plan_and_shuts_down_cleanly(new_processes) -> None:
    results = run_job(["ok", "ok", "ok"], join_timeout=RANK_WAIT_S)
    for rank, (result, err) in enumerate(results):
        assert result["outcome"] == "ok", (result, err[-3000:])
        assert result["sum"] == [1.0 + rank, 1.0 + rank]  # worker{rank+1} added our rank to ones(2)
        workers = result["plan"]["workers"]
        assert [w["name"] for w in workers] == ["worker0", "worker1", "worker2"]
        assert result["plan"]["static_group"] is True
        assert "as a ProcessGroup" not in err, err[-3000:]  # torch's warning about its own Gloo gather
    assert new_processes() == []


def test_from_job_gathers_the_plan_of_a_job_started_by_torchs_own_init_rpc(new_processes) -> None:
    results = run_job(["torch-init", "torch-init"], join_timeout=None)
    for rank, (result, err) in enumerate(results):
        assert result["outcome"] == "ok", (result, err[-3000:])
        assert result["plan"] == {
            "format": "inspector.rpc.plan",
            "version": 1,
            "static_group": True,
            "workers": [
                {"name": "worker0", "device_count": 0, "devices": [], "device_maps": {"worker1": {"cpu": "cpu"}}},
                {"name": "worker1", "device_count": 0, "devices": [], "device_maps": {"worker0": {"cpu": "cpu"}}},
            ],
        }, rank
    assert new_processes() == []
