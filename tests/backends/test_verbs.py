"""Verbs are declared: only public callables a backend defines (or lists in ``__verbs__``) are operations."""

from __future__ import annotations

import re
import sys

import pytest

import inspector.backends as backends
from inspector.backends import BackendRegistry, MissingOperationError, _verbs, declared_verbs


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


# --- callables imported from the same project ------------------------------------------

PROJECT = {
    "shop/__init__.py": "",
    "shop/common.py": "def stats(cfg):\n    '''Shared statistics.'''\n    return {'n': 1}\n",
    "shop/_helpers.py": "def shard(items, rank, world):\n    return items[rank::world]\n",
    "shop_extras/__init__.py": "def describe(cfg):\n    return 'from a sibling top-level package'\n",
    "shop/backends/__init__.py": "",
    "shop/backends/parquet.py": (
        "from json import dumps\n"
        "from typing import cast\n"
        "from shop.common import stats\n"
        "from shop._helpers import shard\n"
        "from shop_extras import describe\n"
        "from inspector.backends import DataBundle\n"
        "def build(cfg, ctx):\n"
        "    return DataBundle(dataset=[], train_loader=[])\n"
    ),
}


@pytest.fixture
def shop(tmp_path, monkeypatch):
    """A real project on sys.path: ``shop`` and ``shop_extras``, one installed distribution when asked."""
    for relative, text in PROJECT.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))

    def install() -> None:
        info = tmp_path / "shop-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shop\nVersion: 1.0\n")
        (info / "top_level.txt").write_text("shop\nshop_extras\n")
        _verbs._distributions.cache_clear()

    yield install
    _verbs._distributions.cache_clear()
    for name in [n for n in sys.modules if n == "shop" or n.startswith(("shop.", "shop_extras"))]:
        del sys.modules[name]


def test_callables_from_elsewhere_in_the_same_package_are_verbs(shop):
    import shop.backends.parquet as parquet

    assert declared_verbs(parquet) == ("build", "stats")  # not dumps, cast (other distributions) nor shard (private)


def test_callables_from_another_top_level_package_of_the_same_distribution_are_verbs(shop):
    shop()  # install the dist-info that lists both top-level packages
    import shop.backends.parquet as parquet

    assert declared_verbs(parquet) == ("build", "describe", "stats")


def test_an_attribute_that_is_not_a_verb_is_named_as_such_with_how_to_declare_it(registry, shop):
    import shop.backends.parquet as parquet

    backends.register_module("parquet", parquet)
    with pytest.raises(MissingOperationError) as exc:
        backends.backend_for("parquet").cast  # noqa: B018
    message = str(exc.value)
    assert "Backend 'parquet' has an attribute 'cast', but it is not a verb" in message
    assert "it is imported from 'typing', which is not part of the backend's project" in message
    assert "__verbs__ = ('build', 'stats', 'cast')" in message
    assert "No registered backend implements" not in message
    assert exc.value.not_a_verb is not None and exc.value.declare == ("build", "stats", "cast")
    private = re.escape("helper imported from the private module 'shop._helpers'")
    with pytest.raises(MissingOperationError, match=private):
        backends.backend_for("parquet").shard  # noqa: B018


def test_declaring_what_the_error_suggests_publishes_the_verb(registry, shop):
    import shop.backends.parquet as parquet

    backends.register_module("parquet", parquet)
    with pytest.raises(MissingOperationError) as exc:
        backends.backend_for("parquet").shard  # noqa: B018
    parquet.__verbs__ = exc.value.declare
    backends.register_module("parquet2", parquet)
    assert backends.backend_for("parquet2").shard([1, 2, 3, 4], 1, 2) == [2, 4]


@pytest.mark.parametrize(
    ("source", "attribute", "reason"),
    [
        ("config = None\n", "config", "it is None"),
        ("import json as utils\n", "utils", "it is the module 'json'"),
        ("LIMIT = 3\n", "LIMIT", "it is not callable (its type is int)"),
    ],
)
def test_attributes_that_can_never_be_verbs_say_only_callables_can(registry, make_backend, source, attribute, reason):
    backends.register_module("m", make_backend("m", source))
    with pytest.raises(MissingOperationError) as exc:
        getattr(backends.backend_for("m"), attribute)
    assert reason in str(exc.value) and "Only callables can be verbs" in str(exc.value)
    assert exc.value.declare is None


def test_a_class_attribute_can_be_declared(registry, make_backend):
    backends.register_module("m", make_backend("m", "class Reader:\n    pass\n"))
    with pytest.raises(MissingOperationError, match=r"it is the class 'Reader'.*__verbs__ = \('build', 'Reader'\)"):
        backends.backend_for("m").Reader  # noqa: B018


def test_a_callable_left_out_of_dunder_verbs_is_named(registry, make_backend):
    source = "__verbs__ = ('build',)\ndef stats(cfg):\n    return 1\n"
    backends.register_module("m", make_backend("m", source))
    backends.register_module("other", make_backend("other", "def stats(cfg):\n    return 2\n"))
    with pytest.raises(MissingOperationError) as exc:
        backends.backend_for("m").stats  # noqa: B018
    assert "the backend's __verbs__ ('build',) does not list it" in str(exc.value)
    assert "Supported by: ['other']" in str(exc.value)


def test_a_name_the_backend_lacks_keeps_the_spelling_hint(registry, make_backend):
    backends.register_module("m", make_backend("m", "def stats(cfg):\n    return 1\n"))
    with pytest.raises(MissingOperationError, match=r"No registered backend implements 'stat'.*Did you mean 'stats'\?"):
        backends.backend_for("m").stat  # noqa: B018
