"""Verbs are declared: only public callables a backend defines (or lists in ``__verbs__``) are operations."""

from __future__ import annotations

import pytest

import inspector.backends as backends
from inspector.backends import BackendRegistry, MissingOperationError, declared_verbs


def test_default_verbs_are_public_functions_defined_in_the_module(make_backend):
    module = make_backend(
        "m",
        """
        import os
        import collections
        from typing import cast

        def stats(cfg):
            return {}

        def describe(cfg):
            return ""

        def _helper():
            pass

        class Dataset:
            pass

        nothing = None
        LIMIT = 3
        """,
    )
    assert declared_verbs(module) == ("build", "describe", "stats")


def test_submodules_none_attributes_and_private_names_are_not_operations(registry, make_backend):
    module = make_backend("m", "import json as utils\nconfig = None\ndef _secret(cfg):\n    pass\n")
    backends.register_module("m", module)
    proxy = backends.backend_for("m")
    for name in ("utils", "config"):
        assert not proxy.supports(name)
        with pytest.raises(MissingOperationError):
            getattr(proxy, name)
    with pytest.raises(AttributeError):
        proxy._secret  # noqa: B018


def test_dunder_verbs_tuple_is_the_whole_list(make_backend):
    module = make_backend(
        "m",
        """
        __verbs__ = ("describe",)

        def describe(cfg):
            return ""

        def write_example_files(directory):
            pass
        """,
    )
    assert declared_verbs(module) == ("build", "describe")


def test_dunder_verbs_may_name_an_imported_callable(make_backend):
    module = make_backend("m", "from os.path import join as describe\n__verbs__ = ('build', 'describe')\n")
    assert declared_verbs(module) == ("build", "describe")


@pytest.mark.parametrize(
    ("declared", "fragment"),
    [("'describe'", "must be a tuple of names"), ("('missing',)", "names ['missing']"), ("(3,)", "names [3]")],
)
def test_invalid_dunder_verbs_are_refused_at_registration(make_backend, declared, fragment):
    module = make_backend("m", f"__verbs__ = {declared}\nmissing = None\n")
    with pytest.raises(TypeError, match=fragment.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        BackendRegistry(discover_plugins=False).register_module("m", module)


def test_an_object_backend_publishes_its_public_methods():
    class Backend:
        label = "not callable"

        def build(self, cfg, ctx):
            return None

        def stats(self, cfg):
            """Compute stats."""
            return {}

        def _private(self):
            pass

    reg = BackendRegistry(discover_plugins=False)
    reg.register_module("obj", Backend())
    proxy = reg.backend_for("obj")
    assert proxy.supports("stats") and not proxy.supports("label")
    info = reg.snapshot().backend("obj")
    assert info.kind == "object" and info.target.endswith("Backend instance")
    assert info.verb("stats").summary == "Compute stats."


def test_verb_info_carries_signature_and_docstring(registry, make_backend):
    module = make_backend(
        "m",
        '''
        def stats(cfg, ctx=None, *, limit: int = 10):
            """Per-field statistics.

            Longer explanation.
            """
            return {}
        ''',
    )
    backends.register_module("m", module)
    verb = backends.snapshot().backend("m").verb("stats")
    assert verb.signature == "(cfg, ctx=None, *, limit: int = 10)"
    assert verb.summary == "Per-field statistics."
    assert verb.doc == "Per-field statistics.\n\nLonger explanation."
    assert verb.defined_in == "backend_m.stats"


def test_verbs_are_fixed_at_registration(registry, make_backend):
    module = make_backend("m")
    backends.register_module("m", module)
    module.late = lambda cfg: None
    assert not backends.backend_for("m").supports("late")


def test_supports_is_reserved_for_the_proxy(make_backend):
    module = make_backend("m", "def supports(op):\n    return True\n")
    assert declared_verbs(module) == ("build",)
    explicit = make_backend("m", "__verbs__ = ('supports',)\ndef supports(op):\n    return True\n")
    with pytest.raises(TypeError, match="reserved by the proxy"):
        declared_verbs(explicit)


def test_each_backend_proxy_is_a_backend_proxy_with_its_verbs_as_properties(registry, make_backend):
    backends.register_module("m", make_backend("m", "def stats(cfg):\n    return 1\n"))
    proxy = backends.backend_for("m")
    assert isinstance(proxy, backends.BackendProxy) and type(proxy).__name__ == "BackendProxy"
    assert proxy.stats(None) == 1
