"""Backends views over hand-made registries: the verb matrix, its styling, verb and batch tables."""

from __future__ import annotations

import types

import pytest
import torch

from inspector.backends import BackendRegistry, MissingOperationError, describe_batch
from inspector.views.backends import (
    ACTIVE,
    IMPORT_ERROR,
    MISSING,
    SUPPORTED,
    UNREGISTERED,
    as_raised,
    batch_table,
    call_snippet,
    import_error_table,
    plugin_table,
    style_verb_matrix,
    verb_matrix,
    verb_table,
)


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec("def build(cfg, ctx):\n    '''Build.'''\n    return None\n" + source, module.__dict__)
    return module


@pytest.fixture
def registry() -> BackendRegistry:
    reg = BackendRegistry(discover_plugins=False)
    reg.register_module("npz", _module("npz_mod", "def describe(cfg, ctx=None):\n    '''Describe.'''\n"))
    reg.register_module("synthetic", _module("syn_mod", "def stats(cfg):\n    '''Stats.'''\n"))
    reg.record_import_error(
        "hdf5", ModuleNotFoundError("No module named 'h5py'", name="h5py"), install="pip install h5py"
    )
    return reg


def test_matrix_has_a_row_per_backend_and_a_column_per_verb(registry):
    frame = verb_matrix(registry.snapshot())
    assert list(frame.index) == ["npz", "synthetic", "hdf5"]
    assert list(frame.columns) == ["status", "build", "describe", "stats", "detail"]
    assert frame.loc["npz", ["build", "describe", "stats"]].tolist() == [SUPPORTED, SUPPORTED, MISSING]
    assert frame.loc["synthetic", ["build", "describe", "stats"]].tolist() == [SUPPORTED, MISSING, SUPPORTED]


def test_import_failure_row_carries_the_error_message(registry):
    frame = verb_matrix(registry.snapshot())
    assert frame.loc["hdf5", "status"] == IMPORT_ERROR
    assert set(frame.loc["hdf5", ["build", "describe", "stats"]]) == {IMPORT_ERROR}
    assert frame.loc["hdf5", "detail"] == "ModuleNotFoundError: No module named 'h5py' (pip install h5py)"


def test_matrix_marks_the_active_backend(registry):
    registry.load_config({"data": {"dataset_type": "synthetic"}})
    frame = verb_matrix(registry.snapshot())
    assert frame["status"].tolist() == ["registered", ACTIVE, IMPORT_ERROR]
    assert frame.attrs["active"] == "synthetic" and frame.attrs["active_set_by"].startswith("load_config(")


def test_an_active_name_that_was_never_registered_gets_its_own_row():
    reg = BackendRegistry(discover_plugins=False)
    reg.set_active("ghost")
    frame = verb_matrix(reg.snapshot())
    assert frame.loc["ghost", "status"] == ACTIVE and frame.loc["ghost", "build"] == UNREGISTERED


def test_styler_colours_cells_and_captions_the_active_backend(registry):
    registry.load_config({"data": {"dataset_type": "npz"}})
    rendered = style_verb_matrix(verb_matrix(registry.snapshot())).to_html()
    assert "Active backend: npz (set by load_config(&lt;mapping&gt;)" in rendered
    assert "rgba(44, 160, 44, 0.22)" in rendered and "#d62728" in rendered and "font-weight: bold" in rendered


def test_styler_caption_without_an_active_backend(registry):
    assert "No active backend (load_config() sets one)" in style_verb_matrix(verb_matrix(registry.snapshot())).to_html()


def test_verb_table_shows_signatures_and_summaries(registry):
    frame = verb_table(registry.snapshot(), "npz")
    assert frame.to_dict("records") == [
        {"verb": "build", "signature": "build(cfg, ctx)", "summary": "Build.", "defined_in": "npz_mod.build"},
        {
            "verb": "describe",
            "signature": "describe(cfg, ctx=None)",
            "summary": "Describe.",
            "defined_in": "npz_mod.describe",
        },
    ]


def test_call_snippet_uses_required_arguments_even_for_a_missing_verb(registry):
    snap = registry.snapshot()
    assert call_snippet(snap, "npz", "describe") == "backend_for('npz').describe(cfg)"
    assert call_snippet(snap, "npz", "stats") == "backend_for('npz').stats(cfg)"
    assert call_snippet(snap, "npz", "build") == "backend_for('npz').build(cfg, ctx)"
    assert call_snippet(snap, "npz", "nothing") == "backend_for('npz').nothing(cfg)"


def test_as_raised_prints_the_error_and_its_cause_like_python(registry):
    with pytest.raises(MissingOperationError) as missing:
        registry.backend_for("npz").stats  # noqa: B018
    text = as_raised("backend_for('npz').stats(cfg)", missing.value)
    assert text.splitlines()[0] == ">>> backend_for('npz').stats(cfg)"
    assert text.endswith(
        "MissingOperationError: Backend 'npz' does not implement 'stats'. Supported by: ['synthetic']."
    )
    with pytest.raises(RuntimeError) as failed:
        registry.backend_for("hdf5")
    chained = as_raised("backend_for('hdf5')", failed.value)
    assert chained.index("ModuleNotFoundError: No module named 'h5py'") < chained.index("BackendImportError:")
    assert "The above exception was the direct cause of the following exception:" in chained


def test_import_error_and_plugin_tables(registry):
    errors = import_error_table(registry.snapshot())
    assert errors.to_dict("records") == [
        {
            "backend": "hdf5",
            "error": "ModuleNotFoundError: No module named 'h5py'",
            "install": "pip install h5py",
            "missing_module": "h5py",
            "source": f"recorded by {__name__}",
            "shadowed": False,
        }
    ]
    assert list(plugin_table(registry.snapshot()).columns) == [
        "name",
        "entry_point",
        "distribution",
        "status",
        "detail",
    ]


def test_batch_table_lists_keys_shapes_and_dtypes():
    frame = batch_table(describe_batch({"obs": torch.zeros(2, 3), "meta": {"id": 7}}))
    assert frame.to_dict("records") == [
        {"key": "obs", "kind": "tensor", "shape": "(2, 3)", "dtype": "float32"},
        {"key": "meta.id", "kind": "int", "shape": "", "dtype": ""},
    ]


def test_styled_matrix_escapes_markup_in_error_messages():
    reg = BackendRegistry(discover_plugins=False)
    reg.record_import_error("evil", ImportError("<script>alert(1)</script>"))
    rendered = style_verb_matrix(verb_matrix(reg.snapshot())).to_html()
    assert "<script>" not in rendered and "&lt;script&gt;" in rendered
