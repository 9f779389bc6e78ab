"""Registration and lookup, and the three failure shapes."""

from __future__ import annotations

import logging
import pickle
import threading

import pytest
from waiting import WAIT_S

import inspector.backends as backends
from inspector.backends import (
    BackendImportError,
    BackendProxy,
    BackendRegistry,
    MissingOperationError,
    UnknownBackendError,
)


def test_registered_backend_is_listed_and_the_list_is_sorted(registry, make_backend):
    backends.register_module("zeta", make_backend("zeta"))
    backends.register_module("alpha", make_backend("alpha"))
    assert backends.available_backends() == ["alpha", "zeta"]


def test_backend_without_build_is_refused_with_type_error(registry, make_backend):
    module = make_backend("nobuild", "def stats(cfg): pass", with_build=False)
    with pytest.raises(TypeError, match=r"must expose a ``build\(cfg, ctx\) -> DataBundle`` callable"):
        backends.register_module("nobuild", module)
    assert backends.available_backends() == []


def test_build_that_is_not_callable_is_refused(registry, make_backend):
    module = make_backend("b", "build = 3", with_build=False)
    with pytest.raises(TypeError, match="'b' must expose"):
        backends.register_module("b", module)


@pytest.mark.parametrize("name", ["", None, 3])
def test_backend_name_must_be_a_non_empty_string(registry, make_backend, name):
    with pytest.raises(ValueError, match="non-empty string"):
        backends.register_module(name, make_backend("x"))


def test_reregistering_a_name_keeps_the_second_and_warns_once(registry, make_backend, caplog):
    first, second = make_backend("first"), make_backend("second")
    backends.register_module("x", first)
    with caplog.at_level(logging.WARNING, logger="inspector.backends"):
        backends.register_module("x", second)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == ["overwriting existing backend registration for 'x'"]
    assert backends.backend_for("x").build is second.build


def test_registering_the_same_backend_again_is_silent(registry, make_backend, caplog):
    module = make_backend("same")
    backends.register_module("same", module)
    with caplog.at_level(logging.WARNING, logger="inspector.backends"):
        backends.register_module("same", module)
    assert caplog.records == []


def test_legacy_register_wraps_one_callable_in_a_shim_module(registry):
    def build(cfg, ctx):
        return "built"

    backends.register("legacy", build)
    proxy = backends.backend_for("legacy")
    assert proxy.build is build
    info = backends.snapshot().backend("legacy")
    assert (info.kind, info.target, info.verb_names) == ("legacy", "_legacy_backend_shim_legacy", ("build",))


def test_origin_names_the_registering_module(registry, make_backend):
    backends.register_module("a", make_backend("a"))
    backends.register_module("b", make_backend("b"), origin="my plugin")
    snap = backends.snapshot()
    assert snap.backend("a").origin == f"registered by {__name__}"
    assert snap.backend("b").origin == "my plugin"


def test_unknown_name_is_a_key_error_listing_known_backends(registry, make_backend):
    backends.register_module("npz", make_backend("npz"))
    backends.register_module("synthetic", make_backend("synthetic"))
    with pytest.raises(KeyError) as exc:
        backends.backend_for("nope")
    assert str(exc.value) == "Unknown backend 'nope'. Known: ['npz', 'synthetic']."
    assert isinstance(exc.value, UnknownBackendError)
    assert (exc.value.name, exc.value.known, exc.value.suggestions) == ("nope", ["npz", "synthetic"], ())


def test_unknown_name_close_to_a_known_one_gets_a_suggestion(registry, make_backend):
    backends.register_module("synthetic", make_backend("synthetic"))
    with pytest.raises(UnknownBackendError, match=r"Known: \['synthetic'\]. Did you mean 'synthetic'\?") as exc:
        backends.backend_for("synthtic")
    assert exc.value.suggestions == ("synthetic",)


def test_failed_import_is_a_runtime_error_chained_from_the_import_error(registry, make_backend):
    backends.register_module("npz", make_backend("npz"))
    error = ImportError("no torch")
    backends.record_import_error("x", error)
    with pytest.raises(RuntimeError) as exc:
        backends.backend_for("x")
    assert str(exc.value).startswith(
        "Backend 'x' failed to import: no torch. Install its dependency or switch to one of ['npz']."
    )
    assert exc.value.__cause__ is error
    assert isinstance(exc.value, BackendImportError)
    assert (exc.value.backend_name, exc.value.error, exc.value.known) == ("x", error, ["npz"])


def test_failed_import_names_what_to_install_and_the_missing_module(registry):
    error = ModuleNotFoundError("No module named 'h5py'", name="h5py")
    backends.record_import_error("hdf5", error, install="pip install h5py", source="demo")
    with pytest.raises(BackendImportError) as exc:
        backends.backend_for("hdf5")
    lines = str(exc.value).splitlines()
    assert lines[1:] == ["install = pip install h5py", "missing_module = h5py", "source = demo"]
    assert (exc.value.install, exc.value.missing_module, exc.value.source) == ("pip install h5py", "h5py", "demo")


def test_a_registration_beats_a_recorded_import_error(registry, make_backend):
    backends.record_import_error("x", ImportError("gone"))
    module = make_backend("x")
    backends.register_module("x", module)
    assert backends.backend_for("x").build is module.build


def test_import_failures_are_not_listed_as_available(registry, make_backend):
    backends.register_module("ok", make_backend("ok"))
    backends.record_import_error("broken", ImportError("nope"))
    assert backends.available_backends() == ["ok"]


def test_missing_verb_raises_missing_operation_error_with_payload(registry, make_backend):
    backends.register_module("npz", make_backend("npz"))
    with pytest.raises(NotImplementedError) as exc:
        backends.backend_for("npz").stats  # noqa: B018
    assert isinstance(exc.value, MissingOperationError)
    assert (exc.value.backend_name, exc.value.op_name) == ("npz", "stats")


def test_missing_verb_hint_lists_supporting_backends_in_registration_order(registry, make_backend):
    stats = "def stats(cfg):\n    return {}\n"
    backends.register_module("c", make_backend("c", stats))
    backends.register_module("a", make_backend("a"))
    backends.register_module("b", make_backend("b", stats))
    with pytest.raises(MissingOperationError) as exc:
        backends.backend_for("a").stats  # noqa: B018
    assert str(exc.value) == "Backend 'a' does not implement 'stats'. Supported by: ['c', 'b']."
    assert exc.value.supported_by == ["c", "b"]


def test_verb_nobody_has_gets_a_spelling_hint(registry, make_backend):
    backends.register_module("a", make_backend("a"))
    with pytest.raises(MissingOperationError) as exc:
        backends.backend_for("a").frobnicate  # noqa: B018
    assert str(exc.value) == (
        "Backend 'a' does not implement 'frobnicate'. No registered backend implements 'frobnicate' "
        "— check the spelling or add it to the backend module."
    )
    assert exc.value.supported_by == [] and exc.value.suggestions == ()


def test_misspelled_verb_suggests_the_close_match(registry, make_backend):
    backends.register_module("a", make_backend("a", "def stats(cfg):\n    return {}\n"))
    with pytest.raises(MissingOperationError, match=r"Did you mean 'stats'\?") as exc:
        backends.backend_for("a").statz  # noqa: B018
    assert exc.value.suggestions == ("stats",)


def test_supports_answers_for_verbs_and_never_raises(registry, make_backend):
    backends.register_module("a", make_backend("a", "def describe(cfg):\n    return ''\n"))
    proxy = backends.backend_for("a")
    assert proxy.supports("build") and proxy.supports("describe")
    assert not proxy.supports("stats") and not proxy.supports("") and not proxy.supports("_private")


def test_proxy_repr_names_the_backend(registry, make_backend):
    backends.register_module("lerobot", make_backend("lerobot"))
    assert repr(backends.backend_for("lerobot")) == "<BackendProxy name='lerobot'>"


def test_each_lookup_returns_a_new_proxy_onto_the_same_backend(registry, make_backend):
    module = make_backend("a")
    backends.register_module("a", module)
    first, second = backends.backend_for("a"), backends.backend_for("a")
    assert first is not second and isinstance(first, BackendProxy)
    assert first.build is second.build is module.build


def test_private_names_on_a_proxy_are_plain_attribute_errors(registry, make_backend):
    backends.register_module("a", make_backend("a"))
    proxy = backends.backend_for("a")
    assert not hasattr(proxy, "_repr_html_")
    assert dir(proxy) == ["build", "supports"]


def test_failure_shapes_survive_pickling(registry):
    errors = [
        UnknownBackendError("x", ["a"], ("a",)),
        MissingOperationError("a", "stats", ["b"]),
        BackendImportError("h", ImportError("no h5py"), ["a"], "pip install h5py", "demo"),
    ]
    for error in errors:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)


def test_separate_registries_share_nothing(make_backend):
    first, second = BackendRegistry(discover_plugins=False), BackendRegistry(discover_plugins=False)
    first.register_module("a", make_backend("a"))
    assert first.available_backends() == ["a"] and second.available_backends() == []


def test_concurrent_registrations_all_land(make_backend):
    reg = BackendRegistry(discover_plugins=False)
    modules = [make_backend(f"b{i}") for i in range(32)]
    threads = [threading.Thread(target=reg.register_module, args=(f"b{i}", m)) for i, m in enumerate(modules)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(thread.is_alive() for thread in threads)
    assert reg.available_backends() == sorted(f"b{i}" for i in range(32))
