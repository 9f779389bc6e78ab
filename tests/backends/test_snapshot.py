"""The registry snapshot: every backend x verb, import failures, plugins and the active backend, frozen."""

from __future__ import annotations

import dataclasses

import pytest

import inspector.backends as backends
from inspector.backends import BackendInfo, ImportFailure, RegistrySnapshot


@pytest.fixture
def populated(registry, make_backend):
    registry.register_module("b", make_backend("b", "def stats(cfg):\n    return {}\n"))
    registry.register_module("a", make_backend("a", "def describe(cfg):\n    return ''\n"))
    registry.record_import_error(
        "hdf5", ModuleNotFoundError("No module named 'h5py'", name="h5py"), install="pip install h5py"
    )
    registry.record_import_error("a", ImportError("old failure"))
    registry.load_config({"data": {"dataset_type": "a"}})
    return registry


def test_snapshot_lists_backends_in_registration_order_with_their_verbs(populated):
    snap = backends.snapshot()
    assert isinstance(snap, RegistrySnapshot)
    assert [(b.name, b.verb_names) for b in snap.backends] == [("b", ("build", "stats")), ("a", ("build", "describe"))]
    assert snap.names == ("a", "b")
    assert snap.verbs == ("build", "describe", "stats")
    assert snap.backend("a").supports("describe") and not snap.backend("a").supports("stats")


def test_snapshot_carries_import_failures_with_the_message_backend_for_raises(populated):
    snap = backends.snapshot()
    hdf5 = next(f for f in snap.import_errors if f.name == "hdf5")
    assert isinstance(hdf5, ImportFailure)
    assert (hdf5.error_type, hdf5.error, hdf5.install, hdf5.missing_module, hdf5.shadowed) == (
        "ModuleNotFoundError",
        "No module named 'h5py'",
        "pip install h5py",
        "h5py",
        False,
    )
    with pytest.raises(RuntimeError) as exc:
        backends.backend_for("hdf5")
    assert hdf5.message == str(exc.value)


def test_a_failure_shadowed_by_a_registration_is_marked_and_left_out_of_failed(populated):
    snap = backends.snapshot()
    assert next(f for f in snap.import_errors if f.name == "a").shadowed
    assert [f.name for f in snap.failed] == ["hdf5"]


def test_snapshot_names_the_active_backend_and_who_set_it(populated):
    snap = backends.snapshot()
    assert snap.active == "a"
    assert snap.active_set_by.startswith("load_config(<mapping>) at test_snapshot.py:")


def test_snapshot_records_are_frozen_and_detached(populated, make_backend):
    snap = backends.snapshot()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.active = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.backends[0].name = "x"  # type: ignore[misc]
    populated.register_module("c", make_backend("c"))
    assert "c" not in snap.names and "c" in backends.snapshot().names


def test_unknown_backend_in_a_snapshot_lists_the_registered(populated):
    with pytest.raises(backends.UnknownBackendError, match=r"Known: \['a', 'b'\]"):
        backends.snapshot().backend("zzz")
    with pytest.raises(backends.UnknownVerbError, match=r"Verbs: \['build', 'stats'\]"):
        backends.snapshot().backend("b").verb("describe")


def test_backend_info_kinds(registry, make_backend):
    class Backend:
        @staticmethod
        def build(cfg, ctx):
            return None

    registry.register_module("mod", make_backend("mod"))
    registry.register_module("cls", Backend)
    registry.register("legacy", lambda cfg, ctx: None)
    kinds = {b.name: (b.kind, b.target) for b in backends.snapshot().backends}
    assert kinds["mod"] == ("module", "backend_mod")
    assert kinds["cls"] == ("class", f"{__name__}.test_backend_info_kinds.<locals>.Backend")
    assert kinds["legacy"] == ("legacy", "_legacy_backend_shim_legacy")
    assert isinstance(backends.snapshot().backends[0], BackendInfo)
