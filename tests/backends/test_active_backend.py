"""The process-wide active backend, set once by ``load_config``, and the fixture helper."""

from __future__ import annotations

import threading

import pytest
from waiting import WAIT_S

import inspector.backends as backends
from inspector.backends import ActiveBackendConflictError, NoActiveBackendError, isolated_registry


def test_fresh_state_has_no_active_backend(registry):
    assert not backends.has_data_backend() and backends.active_backend() is None
    with pytest.raises(RuntimeError, match=r"^No active data backend\.") as exc:
        backends.data_backend()
    assert isinstance(exc.value, NoActiveBackendError)
    assert "load_config()" in str(exc.value) and "Direct TrainConfig() construction" in str(exc.value)


def test_setting_the_active_backend_makes_data_backend_a_proxy_for_it(registry, make_backend):
    backends.register_module("a", make_backend("a"))
    registry.set_active("a")
    assert backends.has_data_backend() and backends.active_backend() == "a"
    assert repr(backends.data_backend()) == "<BackendProxy name='a'>"


def test_setting_the_same_backend_twice_is_silent(registry):
    registry.set_active("a", set_by="first")
    registry.set_active("a", set_by="second")
    assert backends.snapshot().active_set_by == "first"


def test_a_different_backend_is_refused_naming_both_and_who_set_it(registry):
    registry.set_active("a", set_by="train.yaml")
    with pytest.raises(RuntimeError) as exc:
        registry.set_active("b", set_by="eval.yaml")
    assert str(exc.value).startswith("Active backend already set to 'a', refusing to overwrite with 'b'.")
    assert "set_by = train.yaml" in str(exc.value) and "requested_by = eval.yaml" in str(exc.value)
    assert isinstance(exc.value, ActiveBackendConflictError)
    assert (exc.value.current, exc.value.requested, exc.value.set_by) == ("a", "b", "train.yaml")
    assert backends.active_backend() == "a"


def test_set_active_without_set_by_records_the_call_site(registry):
    registry.set_active("a")
    assert backends.snapshot().active_set_by.startswith("set_active() at test_active_backend.py:")


def test_reset_allows_switching(registry):
    registry.set_active("a")
    backends.reset_active_backend()
    registry.set_active("b")
    assert backends.active_backend() == "b"


def test_an_unregistered_active_name_fails_only_on_use(registry):
    registry.set_active("ghost")
    with pytest.raises(KeyError, match="Unknown backend 'ghost'"):
        backends.data_backend()


def test_the_active_backend_is_visible_from_other_threads(registry):
    seen = []
    worker = threading.Thread(target=lambda: registry.set_active("a"))
    worker.start()
    worker.join(WAIT_S)
    assert not worker.is_alive()
    reader = threading.Thread(target=lambda: seen.append(backends.active_backend()))
    reader.start()
    reader.join(WAIT_S)
    assert not reader.is_alive()
    assert seen == ["a"]


def test_load_config_sets_the_active_backend_once(registry, make_backend):
    backends.register_module("a", make_backend("a"))
    backends.register_module("b", make_backend("b"))
    backends.load_config({"data": {"dataset_type": "a"}})
    backends.load_config({"data": {"dataset_type": "a", "batch_size": 2}})  # same name: no-op
    with pytest.raises(ActiveBackendConflictError) as exc:
        backends.load_config({"data": {"dataset_type": "b"}})
    assert exc.value.set_by.startswith("load_config(<mapping>) at test_active_backend.py:")
    assert backends.active_backend() == "a"


def test_load_config_names_the_file_that_set_the_backend(registry, make_backend, tmp_path):
    backends.register_module("a", make_backend("a"))
    path = tmp_path / "train.yaml"
    path.write_text("data:\n  dataset_type: a\n")
    backends.load_config(path)
    assert backends.snapshot().active_set_by.startswith(f"load_config({str(path)!r}) at ")


def test_load_config_can_validate_without_activating(registry, make_backend):
    backends.register_module("a", make_backend("a"))
    cfg = backends.load_config({"data": {"dataset_type": "a"}}, activate=False)
    assert cfg.data.dataset_type == "a" and not backends.has_data_backend()


def test_isolated_registry_restores_everything_even_after_an_error(make_backend):
    with isolated_registry() as outer:
        outer.register_module("outer", make_backend("outer"))
        outer.record_import_error("broken", ImportError("x"))
        outer.set_active("outer")
        before = outer.snapshot()
        with pytest.raises(ZeroDivisionError), isolated_registry() as inner:
            assert backends.available_backends() == [] and not backends.has_data_backend()
            assert backends.snapshot().import_errors == ()
            inner.register_module("inner", make_backend("inner"))
            inner.reset_active()
            inner.set_active("inner")
            raise ZeroDivisionError
        assert backends.snapshot() == before


def test_isolated_registry_leaves_the_default_registry_as_it_found_it(make_backend):
    before = backends.snapshot()
    with isolated_registry() as reg:
        reg.register_module("temporary", make_backend("temporary"))
    assert backends.snapshot() == before


def test_isolated_registry_can_keep_the_current_backends(make_backend):
    with isolated_registry() as reg:
        reg.register_module("kept", make_backend("kept"))
        reg.set_active("kept")
        with isolated_registry(keep_backends=True):
            assert backends.available_backends() == ["kept"]
            assert not backends.has_data_backend()
        assert backends.active_backend() == "kept"


def test_load_config_of_a_typed_config_says_so_in_set_by(registry, make_backend):
    from inspector.backends import DataConfig, TrainConfig

    backends.register_module("a", make_backend("a"))
    backends.load_config(TrainConfig(data=DataConfig("a")))
    assert backends.snapshot().active_set_by.startswith("load_config(<TrainConfig>) at test_active_backend.py:")
