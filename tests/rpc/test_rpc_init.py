"""Which torch entry point ``inspector.rpc.init_rpc`` starts a real job through, and its refusal without RPC.

Each case is a real one-rank job in its own interpreter (env rendezvous on 127.0.0.1): the
job starts, calls itself and shuts down. The two entry points are wrapped only to record
which one ran; each wrapper calls the real function.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
JOB_WAIT_S = 180.0  # importing torch and starting an agent on a busy machine

JOB = textwrap.dedent("""
    import json, os, socket, sys
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", TP_SOCKET_IFNAME="lo")
    import torch
    import torch.distributed.rpc as torch_rpc
    import inspector.rpc as irpc
    from inspector.rpc import _init

    calls = []
    public, internals = torch_rpc.init_rpc, _init.init_through_registry
    def spy_public(*args, **kwargs):
        calls.append(["torch.distributed.rpc.init_rpc", str(kwargs.get("backend"))])
        return public(*args, **kwargs)
    def spy_internals(name, member, *args):
        calls.append(["init_through_registry", member.name])
        return internals(name, member, *args)
    torch_rpc.init_rpc, _init.init_through_registry = spy_public, spy_internals

    backend = None
    if sys.argv[1] == "registry-only":
        tensorpipe = irpc.BackendType.TENSORPIPE
        backend = irpc.register_backend("OURS_ONLY", tensorpipe.value[0], tensorpipe.value[1])
    options = irpc.construct_rpc_backend_options(backend or "TENSORPIPE", rpc_timeout=30, num_worker_threads=2)
    irpc.init_rpc("worker0", backend, rank=0, world_size=1, rpc_backend_options=options, join_timeout=60)
    total = torch_rpc.rpc_sync("worker0", torch.add, args=(torch.ones(2), 2)).tolist()
    torch_rpc.shutdown()
    print(json.dumps({"calls": calls, "sum": total, "torch_knows": sorted(torch_rpc.BackendType.__members__)}))
""")


def run_job(tmp_path: Path, kind: str) -> dict[str, object]:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    result = subprocess.run(
        [sys.executable, str(script), kind],
        capture_output=True,
        text=True,
        timeout=JOB_WAIT_S,
        env={**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_backend_torch_knows_starts_through_torchs_public_init_rpc(tmp_path: Path, new_processes) -> None:
    job = run_job(tmp_path, "tensorpipe")
    assert job["calls"] == [["torch.distributed.rpc.init_rpc", "BackendType.TENSORPIPE"]]
    assert job["sum"] == [3.0, 3.0]  # the job really started: worker0 called itself
    assert new_processes() == []


def test_a_backend_registered_only_here_starts_through_our_registry_not_torchs_init_rpc(
    tmp_path: Path, new_processes
) -> None:
    job = run_job(tmp_path, "registry-only")
    assert job["calls"] == [["init_through_registry", "OURS_ONLY"]]
    assert "OURS_ONLY" not in job["torch_knows"]  # torch's own init_rpc would refuse this member
    assert job["sum"] == [3.0, 3.0]
    assert new_processes() == []


WITHOUT_RPC = textwrap.dedent("""
    import sys

    class WithoutRpc:  # torch.distributed.rpc takes the branch of a torch built without it
        def find_spec(self, name, path=None, target=None):
            if name == "torch.distributed.rpc":
                import torch._C
                if hasattr(torch._C, "_rpc_init"):
                    delattr(torch._C, "_rpc_init")
            return None

    sys.meta_path.insert(0, WithoutRpc())
    import torch.distributed.rpc as torch_rpc
    import inspector.rpc as irpc
    assert not torch_rpc.is_available() and not hasattr(torch_rpc, "init_rpc")
    try:
        irpc.init_rpc("worker0", rank=0, world_size=2, join_timeout=5)
    except irpc.RpcUnavailableError as exc:
        print(type(exc).__name__, isinstance(exc, RuntimeError), str(exc).replace(chr(10), " | "))
""")


def test_a_torch_without_rpc_is_refused_before_anything_starts(tmp_path: Path) -> None:
    script = tmp_path / "without_rpc.py"
    script.write_text(WITHOUT_RPC)
    # no MASTER_ADDR: had it gone on to the rendezvous, it would have refused for that instead
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MASTER_", "RANK"))}
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=JOB_WAIT_S,
        env={**env, "PYTHONPATH": str(PACKAGE_ROOT)},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == (
        "RpcUnavailableError True This torch was built without torch.distributed.rpc. | next step = install a torch "
        "build with distributed support (the default wheels have it)"
    )


def test_only_torchs_warning_about_its_own_gloo_gather_is_silenced() -> None:
    """The real gather torch's start-up runs (``all_gather_object`` over a ``ProcessGroupGloo``) warns; inside
    ``without_gloo_backend_warning`` that warning alone is gone, and the filters are as before afterwards."""
    import warnings
    from datetime import timedelta

    import torch.distributed as dist

    from inspector.rpc._init import without_gloo_backend_warning

    group = dist.ProcessGroupGloo(dist.HashStore(), 0, 1, timedelta(seconds=30))

    def gather_and_warn() -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with without_gloo_backend_warning():
                gathered: list[object] = [None]
                dist.all_gather_object(gathered, {"worker": 0}, group=group)
                warnings.warn("a warning of the user's own", UserWarning, stacklevel=1)
            dist.all_gather_object(gathered, {"worker": 0}, group=group)  # outside: torch's warning as usual
        assert gathered == [{"worker": 0}]
        return [str(w.message) for w in caught]

    before = list(warnings.filters)
    shown = gather_and_warn()
    assert shown[0] == "a warning of the user's own"
    assert len(shown) == 2 and "ProcessGroupGloo" in shown[1] and "as a ProcessGroup" in shown[1]
    assert warnings.filters == before
