"""GPU profiles: what PyTorch's CUDA rules read about a device, for any GPU, from any machine.

PyTorch's CUDA choice depends on the device's compute capability, the cuDNN version, which
fused kernels the build has and the ``torch.backends.cuda`` enable flags. A ``GpuProfile``
holds exactly those, so ``predict(q, k, v, gpu="h100")`` applies PyTorch's rules for an H100 on
a laptop. Presets name the common cards; a profile read from this machine's GPU is
``measured`` (``this_gpu()``), every other one is PyTorch's rules for that GPU, not a
measurement, and says so in its label.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import torch

from inspector.dispatch.torch_sdpa.names import BACKENDS

# What a described GPU is assumed to run, unless told otherwise: a CUDA 13 build of PyTorch
# with cuDNN 9.15.1 (PyTorch's cuDNN-first rule on sm 9.x/10.x needs cuDNN newer than 9.15.0).
DEFAULT_CUDNN = 91501
DEFAULT_CUDA = (13, 0)


class GpuProfile(NamedTuple):
    """A GPU as PyTorch's SDPA rules see it.

    ``enabled`` is the set of backends the ``torch.backends.cuda`` flags allow (``None``: the
    flags in force in this process when a call is decided).
    """

    name: str
    sm: tuple[int, int]
    cudnn_version: int = DEFAULT_CUDNN
    cuda_version: tuple[int, int] = DEFAULT_CUDA
    flash_built: bool = True
    mem_efficient_built: bool = True
    cudnn_built: bool = True
    cudnn_d256: bool = False  # a cuDNN frontend that takes head dims up to 256 (frontend 1.24+)
    enabled: frozenset[str] | None = None
    measured: bool = False  # read from this machine's GPU

    def label(self) -> str:
        """``H100 (sm 9.0, cuDNN 9.15.1, CUDA 13.0)``."""
        major, minor = self.sm
        cuda = ".".join(str(x) for x in self.cuda_version)
        return f"{self.name} (sm {major}.{minor}, cuDNN {format_cudnn(self.cudnn_version)}, CUDA {cuda})"

    def rules_label(self) -> str:
        """What an answer for this GPU is: measured here, or PyTorch's rules for it."""
        if self.measured:
            return f"PyTorch's rules for this machine's {self.label()}"
        return f"PyTorch's rules for {self.label()}, not measured here"

    def with_options(self, *, cudnn: Any = None, enabled: Any = None) -> GpuProfile:
        """This profile with another cuDNN version and/or enable flags."""
        profile = self
        if cudnn is not None:
            profile = profile._replace(cudnn_version=parse_cudnn(cudnn), measured=False)
        if enabled is not None:
            profile = profile._replace(enabled=parse_enabled(enabled))
        return profile


PRESETS: dict[str, GpuProfile] = {
    key: GpuProfile(name, sm)
    for key, name, sm in (
        ("t4", "T4", (7, 5)),
        ("a100", "A100", (8, 0)),
        ("a10", "A10", (8, 6)),
        ("a6000", "RTX A6000", (8, 6)),
        ("3090", "RTX 3090", (8, 6)),
        ("l4", "L4", (8, 9)),
        ("4090", "RTX 4090", (8, 9)),
        ("h100", "H100", (9, 0)),
        ("h200", "H200", (9, 0)),
        ("b200", "B200", (10, 0)),
    )
}
_PREFIXES = ("nvidia", "geforce", "tesla", "rtx")
_SM = re.compile(r"^(?:sm)?(\d{1,2})[._]?(\d)$")


def preset_names() -> str:
    """``t4 (sm 7.5), a100 (sm 8.0), ...`` for messages."""
    return ", ".join(f"{key} (sm {p.sm[0]}.{p.sm[1]})" for key, p in PRESETS.items())


def _key(text: str) -> str:
    key = re.sub(r"[\s\-_]", "", text.strip().lower())
    for prefix in _PREFIXES:
        if key.startswith(prefix) and key != prefix:
            key = key[len(prefix) :]
    return key


def _capability(major: Any, minor: Any) -> tuple[int, int]:
    if (
        isinstance(major, bool)
        or isinstance(minor, bool)
        or not isinstance(major, int)
        or not isinstance(minor, int)
        or not 1 <= major <= 20
        or not 0 <= minor <= 9
    ):
        raise ValueError(f"A compute capability is two whole numbers such as (9, 0); got ({major!r}, {minor!r})")
    return major, minor


def gpu_profile(gpu: Any, *, cudnn: Any = None, enabled: Any = None) -> GpuProfile:
    """The profile ``gpu`` names: a preset (``"h100"``, ``"RTX 4090"``), a compute capability
    (``(9, 0)``, ``"sm90"``, ``"9.0"``), ``"this"`` (this machine's GPU) or a ``GpuProfile``.

    >>> gpu_profile("h100").sm
    (9, 0)
    >>> gpu_profile((8, 6)).name
    'sm 8.6'
    """
    if isinstance(gpu, GpuProfile):
        profile = gpu
    elif isinstance(gpu, str):
        key = _key(gpu)
        if key in PRESETS:
            profile = PRESETS[key]
        elif key in ("this", "cuda", "device"):
            profile = this_gpu()
        elif (match := _SM.match(key)) is not None:
            major, minor = _capability(int(match.group(1)), int(match.group(2)))
            profile = GpuProfile(f"sm {major}.{minor}", (major, minor))
        else:
            near = difflib.get_close_matches(key, list(PRESETS), n=1, cutoff=0.5)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            raise ValueError(
                f"Unknown GPU {gpu!r}.{hint} Presets: {preset_names()}; or give the compute capability, "
                "e.g. gpu=(9, 0) or gpu='sm90'"
            )
    elif isinstance(gpu, (tuple, list)) and len(gpu) == 2:
        major, minor = _capability(*gpu)
        profile = GpuProfile(f"sm {major}.{minor}", (major, minor))
    else:
        raise TypeError(
            f"gpu must be a preset name ({', '.join(PRESETS)}), a compute capability such as (9, 0), or a "
            f"GpuProfile; got {type(gpu).__name__}"
        )
    return profile.with_options(cudnn=cudnn, enabled=enabled)


@functools.lru_cache(maxsize=16)
def this_gpu(index: int | None = None) -> GpuProfile:
    """This machine's GPU as PyTorch sees it (``ValueError`` on a machine without one)."""
    if not torch.cuda.is_available():
        raise ValueError(
            "This machine has no CUDA device: name the GPU to plan for, e.g. gpu='h100' (--gpu h100); "
            f"presets: {preset_names()}"
        )
    device = torch.cuda.current_device() if index is None else index
    major, minor = torch.cuda.get_device_capability(device)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else 0
    cuda = tuple(int(x) for x in (torch.version.cuda or "0.0").split(".")[:2])
    flash = bool(getattr(torch.backends.cuda, "is_flash_attention_available", lambda: True)())
    return GpuProfile(
        torch.cuda.get_device_name(device),
        (int(major), int(minor)),
        int(cudnn or 0),
        (cuda[0], cuda[1]),
        flash,
        True,
        bool(cudnn),
        False,
        None,
        True,
    )


def parse_cudnn(value: Any) -> int:
    """A cuDNN version as PyTorch reports it (``91501``) from ``91501``, ``"9.15.1"`` or ``"9.8"``."""
    if isinstance(value, bool):
        raise ValueError(f"cudnn={value!r}: give a version such as '9.15.1' or 91501")
    if isinstance(value, int):
        if value < 1000:
            raise ValueError(f"cudnn={value}: give a version such as '9.15.1' or as PyTorch reports it (91501)")
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return parse_cudnn(int(text))
        parts = text.split(".")
        if 2 <= len(parts) <= 3 and all(p.isdigit() for p in parts):
            major, minor = int(parts[0]), int(parts[1])
            patch = int(parts[2]) if len(parts) == 3 else 0
            if minor < 100 and patch < 100 and 1 <= major <= 99:
                # cuDNN 9 reports major*10000 + minor*100 + patch; cuDNN 8 and older major*1000 + minor*100 + patch.
                return major * 10000 + minor * 100 + patch if major >= 9 else major * 1000 + minor * 100 + patch
    raise ValueError(f"cudnn={value!r}: write the version as text ('9.15.1') or as PyTorch reports it (91501)")


def format_cudnn(version: int) -> str:
    """``91501`` -> ``9.15.1``; ``8906`` -> ``8.9.6``; 0 (no cuDNN) -> ``none``."""
    if version <= 0:
        return "none"
    if version >= 90000:
        return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"
    return f"{version // 1000}.{version % 1000 // 100}.{version % 100}"


def parse_enabled(value: Any) -> frozenset[str]:
    """Backend names the flags allow, from an iterable or a ``"flash_attention+math"`` text."""
    names: Iterable[Any] = value.replace(",", "+").split("+") if isinstance(value, str) else value
    try:
        chosen = frozenset(str(name).strip() for name in names if str(name).strip())
    except TypeError:
        raise ValueError(f"enabled={value!r}: give backend names, e.g. ('flash_attention', 'math')") from None
    unknown = sorted(chosen - set(BACKENDS))
    if unknown:
        raise ValueError(
            f"enabled={value!r}: no backend {unknown[0]!r}; give backend names joined by '+': {', '.join(BACKENDS)}"
        )
    return chosen
