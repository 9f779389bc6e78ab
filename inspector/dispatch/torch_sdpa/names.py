"""The names every ``torch_sdpa`` module shares: the family, its facts key and PyTorch's backends."""

from __future__ import annotations

FAMILY = "torch_sdpa"
FACTS = "sdpa"  # the key of ``CallContext.extra`` holding the ``SdpaCall``

# PyTorch's backends by their ``SDPBackend`` names in lower case.
FLASH, EFFICIENT, CUDNN, OVERRIDEABLE, MATH = (
    "flash_attention",
    "efficient_attention",
    "cudnn_attention",
    "overrideable",
    "math",
)
BACKENDS = (FLASH, EFFICIENT, CUDNN, OVERRIDEABLE, MATH)
