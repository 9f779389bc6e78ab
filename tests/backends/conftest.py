"""Fixtures: every test gets a clean default registry (restored afterwards) and real backend modules."""

from __future__ import annotations

import textwrap
import types
from collections.abc import Callable, Iterator

import pytest

from inspector.backends import BackendRegistry, isolated_registry

BUILD_SOURCE = '''
from inspector.backends import DataBundle

def build(cfg, ctx):
    """Build a one-item bundle."""
    return DataBundle(dataset=[cfg], train_loader=[[cfg]], train_iters=1)
'''


@pytest.fixture
def registry() -> Iterator[BackendRegistry]:
    """The default registry, emptied for this test and restored after it (isolated_registry)."""
    with isolated_registry() as reg:
        yield reg


@pytest.fixture
def make_backend() -> Callable[..., types.ModuleType]:
    """``make_backend("name", source)``: a real module running ``source`` after a default ``build``."""

    def make(name: str, source: str = "", *, with_build: bool = True) -> types.ModuleType:
        module = types.ModuleType(f"backend_{name}")
        code = (BUILD_SOURCE if with_build else "") + textwrap.dedent(source)
        exec(compile(code, f"<backend {name}>", "exec"), module.__dict__)
        return module

    return make
