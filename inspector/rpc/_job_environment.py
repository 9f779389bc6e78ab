"""What one rank runs on, as a job record: torch, CUDA, cuDNN, the GPU, the SDPA flags, ``INSPECTOR_OPS``.

Every key is compared across the job's ranks, except the identity keys (``IDENTITY``: host,
process, local rank, visible devices), which differ from rank to rank by design. The flags are
read through torch's public calls (``torch.backends.cuda.flash_sdp_enabled()`` ...), so this
record needs no other part of the inspector.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Callable
from typing import Any

from inspector._environment import DISTRIBUTION, _version
from inspector._job_records import ENVIRONMENT, VERSION, check_record, clip

IDENTITY = ("host", "pid", "local rank", "CUDA_VISIBLE_DEVICES")


def _read(reader: Callable[[], Any]) -> Any:
    """One value, or the error's type when torch cannot answer here (a broken driver, an old torch)."""
    try:
        value = reader()
    except Exception as exc:
        return clip(f"unreadable ({type(exc).__name__})")
    if value is None or isinstance(value, bool | int | float):
        return value
    return clip(value)


def _gpu_name() -> str | None:
    """The name of this process's current GPU (the one its tensors go to), not GPU 0's."""
    import torch

    return torch.cuda.get_device_name(torch.cuda.current_device()) if torch.cuda.is_available() else None


def _capability() -> str | None:
    import torch

    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(torch.cuda.current_device())
    return f"sm{major}{minor}"


def environment_values() -> dict[str, Any]:
    """This process's values (``IDENTITY`` first), each a short string, a number, a flag or None."""
    import torch

    cuda = torch.backends.cuda
    values: dict[str, Callable[[], Any]] = {
        "host": socket.gethostname,
        "pid": os.getpid,
        "local rank": lambda: os.environ.get("LOCAL_RANK"),
        "CUDA_VISIBLE_DEVICES": lambda: os.environ.get("CUDA_VISIBLE_DEVICES"),
        "inspector": lambda: _version(DISTRIBUTION),
        "python": platform.python_version,
        "torch": lambda: torch.__version__,
        "CUDA": lambda: torch.version.cuda,
        "cuDNN": lambda: torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "GPU": _gpu_name,
        "GPU capability": _capability,
        "GPUs": lambda: torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "sdpa flash enabled": lambda: cuda.flash_sdp_enabled(),
        "sdpa mem_efficient enabled": lambda: cuda.mem_efficient_sdp_enabled(),
        "sdpa math enabled": lambda: cuda.math_sdp_enabled(),
        "sdpa cudnn enabled": lambda: cuda.cudnn_sdp_enabled(),
        "matmul allow_tf32": lambda: cuda.matmul.allow_tf32,
        "float32 matmul precision": lambda: torch.get_float32_matmul_precision(),
        "deterministic algorithms": lambda: torch.are_deterministic_algorithms_enabled(),
        "INSPECTOR_OPS": lambda: os.environ.get("INSPECTOR_OPS"),
    }
    return {key: _read(reader) for key, reader in values.items()}


def environment_record() -> dict[str, Any]:
    """This process's environment as a plain, versioned record (NOTE [ Job records ])."""
    return check_record({"kind": ENVIRONMENT, "version": VERSION, "values": environment_values()})
