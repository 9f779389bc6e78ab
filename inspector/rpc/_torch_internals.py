"""The private torch names our ``init_rpc`` and TENSORPIPE handler rely on, checked where they are used.

NOTE [ Pinned torch internals ]
``init_rpc`` repeats the steps of torch's own ``init_rpc`` (see NOTE [ Our init_rpc ]), which
needs names torch does not promise to keep (``_init_counter``, ``api._init_rpc_states``,
``_create_store_from_options`` ...); they are the ones torch 2.13 has. The package's lower
bound on torch is older, so before touching any of them we look them all up, and a torch that
lacks one gets an ``UnsupportedTorchError`` naming the version, what is missing and the way
around it (torch 2.13, or torch's own ``init_rpc`` with ``BackendType.TENSORPIPE``), instead of
an ``AttributeError`` from the middle of a half-started agent.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from inspector._messages import Message
from inspector.rpc._errors import RpcError

TESTED_TORCH = "2.13"

INIT_RPC_INTERNALS = (
    "torch.distributed._create_store_from_options",
    "torch.distributed.rendezvous",
    "torch.distributed.PrefixStore",
    "torch.distributed.rpc._is_current_rpc_agent_set",
    "torch.distributed.rpc._init_counter",
    "torch.distributed.rpc._init_counter_lock",
    "torch.distributed.rpc._set_profiler_node_id",
    "torch.distributed.rpc.dist_autograd._init",
    "torch.distributed.rpc.api._init_rpc_states",
)
TENSORPIPE_INTERNALS = ("torch.distributed.rpc.backend_registry._tensorpipe_init_backend_handler",)


class UnsupportedTorchError(RpcError, RuntimeError):
    """The installed torch lacks internals we need; ``.torch_version`` and ``.missing`` say which."""

    def __init__(self, needed_by: str, torch_version: str, missing: list[str]) -> None:
        self.needed_by = needed_by
        self.torch_version = torch_version
        self.missing = missing
        message = Message(
            f"{needed_by} needs torch internals that torch {torch_version} does not have.",
            {"torch version": torch_version, "missing": missing, "tested with": f"torch {TESTED_TORCH}"},
            next_step=f"install torch {TESTED_TORCH}, or start RPC with torch's own "
            "torch.distributed.rpc.init_rpc(name, backend=torch.distributed.rpc.BackendType.TENSORPIPE, ...) "
            "(registered custom backends need inspector.rpc.init_rpc)",
        )
        super().__init__(message)


def _resolves(path: str) -> bool:
    """Whether a dotted name exists: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def require_torch_internals(paths: Iterable[str], needed_by: str) -> None:
    """Raise ``UnsupportedTorchError`` unless every dotted name in ``paths`` exists in this torch."""
    import torch

    missing = [path for path in paths if not _resolves(path)]
    if missing:
        raise UnsupportedTorchError(needed_by, str(torch.__version__), missing)
