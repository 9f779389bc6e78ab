"""Real jobs gathering their job view: three ranks as separate processes on 127.0.0.1 (gloo), as three nodes would.

Each rank is ``job_view_rank.py`` in its own interpreter, started by the test with ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set (as SLURM or torchrun would); every
process is waited on with a bound, and none may be left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inspector._processes import stop_processes
from inspector.rpc import JobView
from inspector.rpc._gather_meeting import REPORT_S
from tests.rpc.test_rpc_job import PACKAGE_ROOT, RANK_WAIT_S, SLACK_S, free_port

pytestmark = pytest.mark.slow

RANK_SCRIPT = Path(__file__).with_name("job_view_rank.py")


def run_ranks(
    modes: list[str], rank_env: dict[int, dict[str, str]] | None = None, **env_extra: str
) -> list[dict[str, Any]]:
    """One process per mode (rank = position), each waited on with a bound; each rank's JSON result."""
    base = {key: value for key, value in os.environ.items() if key != "INSPECTOR_OPS"}
    env = {
        **base,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(len(modes)),
        "GLOO_SOCKET_IFNAME": "lo",
        "TP_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")])),
        **env_extra,
    }
    procs = []
    for rank, mode in enumerate(modes):
        own = {**env, "RANK": str(rank), **(rank_env or {}).get(rank, {})}
        procs.append(
            subprocess.Popen(
                [sys.executable, str(RANK_SCRIPT), mode],
                env=own,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    try:
        for rank, proc in enumerate(procs):
            out, err = proc.communicate(timeout=RANK_WAIT_S)
            lines = out.strip().splitlines()
            assert lines, f"rank {rank} printed nothing:\n{err[-3000:]}"
            results.append({**json.loads(lines[-1]), "stderr": err[-3000:]})
    finally:
        stop_processes(procs, 5.0)
    return results


def test_a_ddp_job_names_the_rank_on_another_backend_the_straggler_and_the_environment_that_differs(
    tmp_path, new_processes
) -> None:
    out = tmp_path / "job.json"
    results = run_ranks(
        ["ddp", "ddp-math", "ddp-slow"], {2: {"INSPECTOR_OPS": "profile=reference"}}, JOB_VIEW_OUT=str(out)
    )
    for rank, result in enumerate(results):
        assert result["outcome"] == "ok", result
        assert result["view"] is (rank == 0), result
    assert results[0]["kept"] is True
    view = JobView.load(out)
    assert view.ranks == (0, 1, 2) and view.refused == {}
    assert view.how == "over a gloo group beside the job's gloo process group"

    (difference,) = view.sdpa.differences
    assert difference.usual == ("flash_attention",) and difference.usual_ranks == (0, 2)
    assert difference.odd == ((1, ("math",)),)
    assert difference.signature == "float32 q(N, 4, L, 32) k(N, 4, S, 32) v(N, 4, S, 32) cpu causal"
    assert view.sdpa.odd_ranks == (1,)

    loader = view.loader
    assert loader.spread.metric == "wait_s_median"  # every rank timed a step
    assert (loader.straggler, loader.slowest) == (2, 2) and loader.fastest in (0, 1)
    assert loader.ratio > 2, loader.spread  # 80 ms of sleeps per batch against none
    assert loader.records[2]["verdict"] == "loader-bound"

    (env,) = view.environment.differences
    assert env.key == "INSPECTOR_OPS"
    assert env.values == (("None", (0, 1)), ("'profile=reference'", (2,)))

    findings = results[0]["findings"]
    assert findings[0] == (
        "rank 1 ran math (enabled math, against enabled flash_attention, math) where ranks [0, 2] "
        "ran flash_attention, for float32 q(N, 4, L, 32) k(N, 4, S, 32) v(N, 4, S, 32) cpu causal"
    )
    assert findings[1].startswith("rank 2 is the straggler: its median wait for data per step is ")
    assert findings[2] == "INSPECTOR_OPS differs: None on ranks [0, 1], 'profile=reference' on rank 2"
    assert new_processes() == []


@pytest.fixture(scope="module")
def split_view(tmp_path_factory) -> JobView:
    """One real 3-rank job whose ranks had other sequence lengths and split on two kinds of call."""
    out = tmp_path_factory.mktemp("split") / "job.json"
    results = run_ranks(["split"] * 3, JOB_VIEW_OUT=str(out))
    for rank, result in enumerate(results):
        assert result["outcome"] == "ok" and result["view"] is (rank == 0), result
        assert result["same_again"] is True, result  # a second gather at once meets the second of the others
    return JobView.load(out)


def signature(view: JobView, head_dim: int):
    (found,) = [s for s in view.sdpa.signatures if s.signature.startswith(f"float32 q(N, 4, L, {head_dim})")]
    return found


def test_ranks_whose_calls_had_other_sequence_lengths_are_still_compared(split_view, new_processes) -> None:
    assert len(split_view.sdpa.signatures) == 3  # one per head dim, whatever lengths each rank's batches had
    agreed = signature(split_view, 32)
    assert agreed.calls == ((0, 3), (1, 3), (2, 3)) and agreed.odd == ()
    assert agreed.usual == ("flash_attention",) and agreed.usual_ranks == (0, 1, 2)
    rows = split_view.sdpa.to_frame()
    shapes = set(rows.loc[rows["shapes"].str.endswith("32)"), "shapes"])
    assert shapes == {
        f"q(2, 4, {16 + 8 * r}..{30 + 8 * r}, 32) k(2, 4, {16 + 8 * r}..{30 + 8 * r}, 32) "
        f"v(2, 4, {16 + 8 * r}..{30 + 8 * r}, 32)"
        for r in range(3)
    }
    assert new_processes() == []


def test_the_odd_rank_of_a_two_against_one_split_is_named_even_when_it_is_rank_0(split_view) -> None:
    odd = signature(split_view, 16)
    assert (odd.usual, odd.usual_ranks, odd.odd, odd.disagree) == (
        ("flash_attention",),
        (1, 2),
        ((0, ("math",)),),
        False,
    )
    found = (
        "rank 0 ran math (enabled math, against enabled flash_attention, math) where ranks [1, 2] ran "
        "flash_attention, for float32 q(N, 4, L, 16) k(N, 4, S, 16) v(N, 4, S, 16) cpu causal"
    )
    assert found in split_view.findings()


def test_a_three_way_split_says_the_ranks_disagree_and_lists_each(split_view) -> None:
    split = signature(split_view, 8)
    assert split.disagree and split.usual == ()
    assert split.odd == ((0, ("flash_attention",)), (1, ("math",)), (2, ("flash_attention", "math")))
    assert (
        "the ranks disagree, with no majority, for float32 q(N, 4, L, 8) k(N, 4, S, 8) v(N, 4, S, 8) cpu causal: "
        "rank 0 ran flash_attention (enabled flash_attention, math); rank 1 ran math (enabled math); "
        "rank 2 ran flash_attention/math (enabled flash_attention, math; enabled math)"
    ) in split_view.findings()
    assert split_view.sdpa.odd_ranks == (0, 1, 2)


def test_a_rank_that_never_gathers_is_named_by_the_others_within_the_bound(tmp_path, new_processes) -> None:
    timeout = 8.0
    results = run_ranks(["rpc", "rpc", "rpc-abstain"], GATHER_TIMEOUT=str(timeout), GAVE_UP=str(tmp_path / "gave-up"))
    for result in results:
        assert "outcome" not in result, result  # nothing escaped: init_rpc, both gathers and shutdown ran
    first = results[0]["first"]
    assert first["ranks"] == [0, 1, 2] and first["findings"] == []
    assert first["how"].startswith("over a gloo group on the job's rendezvous store at 127.0.0.1:")
    assert results[1]["first"] is None and results[2]["first"] is None
    for result in results[:2]:
        second = result["second"]
        assert (second["exception"], second["missing"], second["arrived"]) == ("JobGatherError", [2], [0, 1])
        assert second["message"].startswith("gather timed out after 8 s: ranks [2] never called inspector.rpc.gather.")
        assert timeout <= second["seconds"] <= timeout + SLACK_S, second
    late = results[2]["second"]
    assert (late["exception"], late["missing"]) == ("JobGatherError", [2])
    assert "this rank (rank 2) called gather after rank" in late["message"]
    assert late["seconds"] <= SLACK_S, late  # it found the verdict at once, no wait of its own
    assert new_processes() == []


def test_a_rank_of_another_version_and_one_sending_too_much_are_refused_by_name(tmp_path, new_processes) -> None:
    out = tmp_path / "job.json"
    results = run_ranks(["fault"] * 3, {1: {"FAULT": "version"}, 2: {"FAULT": "oversized"}}, JOB_VIEW_OUT=str(out))
    for rank, result in enumerate(results):
        assert result.get("outcome") == "ok" and result["view"] is (rank == 0), result
        refusal = result["subgroup"]
        assert refusal["exception"] == "GatherUsageError", refusal
        assert refusal["message"].startswith(
            f"gather compares every rank of the job, and rank {rank} of 3 was given a subgroup (ranks [0, 1])."
        )
        assert "next step = call gather(...) without group= on every rank of the job" in refusal["message"]
    view = JobView.load(out)
    assert view.ranks == (0,) and sorted(view.refused) == [1, 2]
    assert view.refused[1] == (
        "payload.version: is 99; this inspector reads 1: run one inspector version on every rank"
    )
    assert view.refused[2].startswith("payload: claims 262,144 bytes; a payload holds 1 .. 65,536, so that rank ")
    assert view.findings()[:2] == [f"rank {rank}'s records were refused: {view.refused[rank]}" for rank in (1, 2)]
    assert new_processes() == []


@pytest.mark.parametrize(
    ("mode", "dies", "where"),
    [("fault", 2, "die-gather"), ("fault", 1, "die-sizes"), ("fault", 0, "die-gather"), ("rpc-fault", 2, "die-gather")],
    ids=["rank 2 in the gather", "rank 1 in the sizes", "rank 0, the store's host", "rank 2 of an RPC job"],
)
def test_a_rank_that_dies_mid_gather_is_named_by_every_other_rank(mode, dies, where, new_processes) -> None:
    results = run_ranks([mode] * 3, {dies: {"FAULT": where}})
    assert results[dies]["outcome"] == "died", results[dies]
    for rank, result in enumerate(results):
        if rank == dies:
            continue
        assert (result.get("exception"), result["gone"]) == ("GatherFailedError", [dies]), result
        message = result["message"]
        assert message.startswith("gather failed after every rank had come ("), message
        assert ".cc:" not in message.splitlines()[0] and "('" not in message, message  # gloo's location left out
        if dies == 0:
            assert "is gone too: rank 0 (or torchrun's agent), which hosts it, died or was killed" in message
        else:
            assert f"ranks [{dies}] did not report back within 5 s after it: they died, hung or were killed" in message
        assert f"next step = look at the log of rank {dies} (its exit code, an out-of-memory kill)" in message
        assert result["seconds"] <= REPORT_S + SLACK_S, result  # the report window, not the 60 s gather bound
    assert new_processes() == []


def test_a_rank_that_dies_right_after_the_ranks_met_is_named_within_the_gathers_bound(new_processes) -> None:
    timeout = 10.0  # the others wait for it in the group's set-up, bounded by what is left of the gather's time
    results = run_ranks(["fault"] * 3, {1: {"FAULT": "die-group"}}, GATHER_TIMEOUT=str(timeout))
    assert results[1] == {**results[1], "outcome": "died", "in": "new_group"}
    for result in (results[0], results[2]):
        assert (result.get("exception"), result["gone"]) == ("GatherFailedError", [1]), result
        assert "ranks [1] did not report back within 5 s after it" in result["message"]
        assert result["seconds"] <= timeout + REPORT_S + SLACK_S, result
    assert new_processes() == []


def test_a_rank_stuck_mid_gather_is_named_within_the_gathers_bound(new_processes) -> None:
    timeout = 10.0
    results = run_ranks(["fault"] * 3, {2: {"FAULT": "hang-gather"}}, GATHER_TIMEOUT=str(timeout))
    assert results[2]["outcome"] == "hung", results[2]
    for result in results[:2]:
        assert (result.get("exception"), result["gone"]) == ("GatherFailedError", [2]), result
        assert "ranks [2] did not report back within 5 s after it: they died, hung or were killed" in result["message"]
        assert result["seconds"] <= timeout + REPORT_S + SLACK_S, result
    assert new_processes() == []
