"""One root: every error ``inspector.backends`` raises is a ``BackendError`` and still the builtin it was."""

from __future__ import annotations

import pickle

import pytest

import inspector.backends as backends
from inspector.backends import (
    ActiveBackendConflictError,
    BackendError,
    BackendImportError,
    BuildContext,
    BuildContextError,
    ConfigError,
    ConfigNotFoundError,
    ConfigTypeError,
    DataConfig,
    InvalidBackendError,
    InvalidBackendNameError,
    MissingOperationError,
    NoActiveBackendError,
    UnknownBackendError,
    UnknownVerbError,
)
from inspector.errors import InspectorError

BUILTIN_OF = {
    ActiveBackendConflictError: RuntimeError,
    BackendImportError: RuntimeError,
    BuildContextError: ValueError,
    ConfigError: ValueError,
    ConfigNotFoundError: FileNotFoundError,
    ConfigTypeError: TypeError,
    InvalidBackendError: TypeError,
    InvalidBackendNameError: ValueError,
    MissingOperationError: NotImplementedError,
    NoActiveBackendError: RuntimeError,
    UnknownBackendError: KeyError,
    UnknownVerbError: KeyError,
}


def test_backend_error_is_an_inspector_error_exported_by_the_facade():
    assert issubclass(BackendError, InspectorError) and "BackendError" in backends.__all__


@pytest.mark.parametrize("cls", sorted(BUILTIN_OF, key=lambda c: c.__name__))
def test_every_error_class_is_a_backend_error_and_its_builtin(cls):
    assert issubclass(cls, BackendError) and issubclass(cls, BUILTIN_OF[cls])
    assert cls.__name__ in backends.__all__


def test_every_exception_class_in_the_facade_is_covered_here():
    exported = {getattr(backends, n) for n in backends.__all__}
    errors = {c for c in exported if isinstance(c, type) and issubclass(c, BaseException)}
    assert errors == {BackendError, *BUILTIN_OF}


def _raised(action) -> BaseException:
    with pytest.raises(BaseException) as exc:
        action()
    return exc.value


def test_what_the_registry_raises_is_a_backend_error(registry, make_backend):
    registry.register_module("a", make_backend("a", "def stats(cfg):\n    return 1\n"))
    cases = {
        "no build": lambda: backends.register_module("x", make_backend("x", with_build=False)),
        "empty name": lambda: backends.register_module("", make_backend("y")),
        "bad __verbs__": lambda: backends.register_module("z", make_backend("z", "__verbs__ = 'build'\n")),
        "unknown backend": lambda: backends.backend_for("nope"),
        "missing verb": lambda: backends.backend_for("a").describe,
        "no active backend": backends.data_backend,
        "raw dict": lambda: backends.build_data({"data": {}}),
        "source type": lambda: backends.load_config(3),
        "bad value": lambda: backends.load_config({"data": {"dataset_type": "a", "batch_size": 0}}),
        "read-only options": lambda: DataConfig("a").options.update(x=1),  # type: ignore[attr-defined]
        "build context": lambda: BuildContext(rank=3, world_size=2),
        "snapshot backend": lambda: backends.snapshot().backend("nope"),
        "snapshot verb": lambda: backends.snapshot().backend("a").verb("nope"),
    }
    for what, action in cases.items():
        error = _raised(action)
        assert isinstance(error, BackendError), f"{what}: {type(error).__mro__}"


def test_import_failures_and_conflicts_are_backend_errors(registry, make_backend):
    registry.record_import_error("h5", ImportError("No module named 'h5py'"))
    assert isinstance(_raised(lambda: backends.backend_for("h5")), BackendError)
    registry.register_module("a", make_backend("a"))
    registry.register_module("b", make_backend("b"))
    backends.load_config({"data": {"dataset_type": "a"}})
    assert isinstance(_raised(lambda: backends.load_config({"data": {"dataset_type": "b"}})), BackendError)


@pytest.mark.parametrize(
    "error",
    [
        ConfigNotFoundError("No config file at x.yaml", source="x.yaml"),
        ConfigError("bad", key="data.x", value=3, known=["a"], source="t.yaml"),
        MissingOperationError("a", "cast", ["b"], (), not_a_verb="it is imported", declare=("build", "cast")),
    ],
)
def test_errors_keep_their_class_and_facts_through_pickling(error):
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error)
