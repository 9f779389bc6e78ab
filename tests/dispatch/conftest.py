"""A toy family for the resolution tests (engine isolation is the suite-wide autouse fixture in tests/conftest.py)."""

from __future__ import annotations

import pytest
import torch

import inspector.examples  # noqa: F401  (registers attention and rotary)
from inspector.dispatch import ImplRecord, Spec, register_family

BF16 = torch.bfloat16


def toy_rows() -> list[ImplRecord]:
    return [
        ImplRecord("toy", "alpha", "alpha-obj", Spec.dtype_in(BF16), priority=0),
        ImplRecord("toy", "fp8", "fp8-obj", Spec.always(), priority=1, faithful=False),
        ImplRecord("toy", "beta", "beta-obj", Spec.always(), priority=10),
    ]


@pytest.fixture
def toy() -> str:
    """The toy family: alpha (bf16 only), fp8 (unfaithful), beta (fallback)."""
    register_family("toy", toy_rows, "beta")
    return "toy"
