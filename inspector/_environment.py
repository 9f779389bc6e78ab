"""Where something ran: versions, CPU, GPU and commit.

One description of the machine and software, shared by the loader's benchmark history (kept with
every run) and the HTML report (its Environment section). Standard library only; torch is asked
about the GPU only when it is already imported.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

DISTRIBUTION = "dispatch-inspector"


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's model name (Linux), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name() -> str | None:
    """The first CUDA device's name, or None without one (imports torch only if it is already loaded)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return str(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else None
    except Exception:  # a broken driver must not break a benchmark's bookkeeping
        return None


def gpu_count() -> int:
    """How many CUDA devices torch sees (0 without torch loaded, without CUDA, or with a broken driver)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    try:
        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except Exception:
        return 0


def _git(*args: str) -> str | None:
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def commit() -> str | None:
    """The git commit of the ``inspector`` checkout this code runs from, or None outside one.

    Only a checkout *of inspector* counts: a copy installed into a virtualenv that lives inside
    some other repository must not report that repository's commit.
    """
    top = _git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != Path(__file__).resolve().parent.parent:
        return None
    return _git("rev-parse", "--short", "HEAD")


def environment() -> dict[str, Any]:
    """A JSON-ready description of this machine and software."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "inspector": _version(DISTRIBUTION),
        "commit": commit(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "gpu": gpu_name(),
        "gpus": gpu_count(),
        "load_average": load,
    }
