"""Where a benchmark ran: versions, CPU, GPU and commit, kept with every result in the history."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any


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


def commit() -> str | None:
    """The git commit of the ``inspector`` checkout this code runs from, or None outside a checkout."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


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
        "inspector": _version("dispatch-inspector"),
        "commit": commit(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "gpu": gpu_name(),
        "load_average": load,
    }
