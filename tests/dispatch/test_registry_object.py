"""The dispatch registry is one object (NOTE [ Dispatch state ]): a default instance behind the
module functions, instances that share nothing, and one save/restore for everything it holds."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

import inspector.dispatch as dispatch
from inspector.dispatch import (
    CallContext,
    DispatchRegistry,
    ImplRecord,
    Spec,
    UnknownFamilyError,
    default_registry,
    record_decisions,
    resolve,
)
from inspector.dispatch.testing import isolated_dispatch

F32 = torch.float32


def _rows(family: str) -> list[ImplRecord]:
    return [
        ImplRecord(family, "fast", lambda: "fast", Spec.dtype_in(torch.float16), priority=0),
        ImplRecord(family, "ref", lambda: "ref", Spec.always(), priority=10),
    ]


def test_the_module_functions_are_the_default_registrys_methods() -> None:
    registry = default_registry()
    for name in ("register_family", "families", "rows", "get_family", "invalidate", "register_impl"):
        assert getattr(dispatch, name) == getattr(registry, name), name
    for name in ("set_op", "reload_env", "register_env_alias", "process_selection", "env_selection"):
        assert getattr(dispatch, name) == getattr(registry.tier, name), name


def test_a_registry_of_its_own_shares_nothing_with_the_default() -> None:
    own = DispatchRegistry()
    own.register_family("private_family", _rows("private_family"), "ref")
    assert own.registered() == ("private_family",) and own.rows("private_family")[0].name == "fast"
    assert "private_family" not in default_registry().registered()
    own.tier.set_op("private_family", "ref")
    assert own.tier.env_selection("private_family") == "ref" and "private_family" not in dispatch.process_selection()
    with pytest.raises(UnknownFamilyError):
        dispatch.get_family("private_family")


def test_the_process_tier_is_idle_only_once_read_and_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = DispatchRegistry()
    registry.register_family("toy", _rows("toy"), "ref")
    assert registry.tier.mapping is None and not registry.tier.idle  # the environment is not read yet
    monkeypatch.setenv("INSPECTOR_OPS", "")
    assert registry.tier.seeded() == {} and registry.tier.idle
    registry.tier.set_op("toy", "ref")
    assert not registry.tier.idle and registry.tier.mapping == {"toy": "ref"}
    registry.tier.set_op("toy", None)
    assert registry.tier.idle


def test_save_and_restore_cover_everything_the_registry_holds(caplog: pytest.LogCaptureFixture) -> None:
    registry = default_registry()
    ctx = CallContext("attention", dtype=F32, ndim=4, head_dim=64, extra={"kv_len": 128})
    with isolated_dispatch():
        registry.register_family("scratch", _rows("scratch"), "ref")
        dispatch.set_op("scratch", "fast")
        recorder = record_decisions()
        resolve("scratch", CallContext("scratch", dtype=F32))
        with caplog.at_level(logging.WARNING, logger="inspector.dispatch"):
            assert registry.notices.warn_once("a warning given inside")
        assert recorder in registry.recorders and registry.plans
    assert "scratch" not in registry.registered() and "scratch" not in dispatch.process_selection()
    assert recorder not in registry.recorders and not recorder.recording
    assert registry.notices.warn_once("a warning given inside")  # forgotten with the rest
    assert resolve("attention", ctx).name == "sdpa"


def test_nothing_outside_the_registry_reads_its_private_state() -> None:
    package = Path(dispatch.__file__).resolve().parents[1]
    private = ("_FAMILIES", "_EXTERNAL", "PLUGINS[", "._families", "._external", "._plugins", "UNSEEDED")
    readers = [
        f"{path.relative_to(package)}: {name}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "registry.py" or path.parent.name != "dispatch"
        for name in private
        if name in path.read_text(encoding="utf-8") and not (name == "._plugins" and path.parent.name == "backends")
    ]
    assert readers == []
