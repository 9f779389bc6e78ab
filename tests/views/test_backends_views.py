"""Backends views over hand-made registries: the verb matrix, its styling, verb and batch tables."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from inspector.backends import BackendRegistry, MissingOperationError, describe_batch
from inspector.views._cells import in_notebook_terms
from inspector.views._docstrings import docstring_html
from inspector.views.backends import (
    ACTIVE,
    IMPORT_ERROR,
    MISSING,
    SUPPORTED,
    UNREGISTERED,
    BackendsState,
    as_raised,
    batch_table,
    call_snippet,
    import_error_table,
    page,
    plugin_table,
    style_verb_matrix,
    verb_html,
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
    assert frame[["key", "kind", "shape", "dtype"]].to_dict("records") == [
        {"key": "obs", "kind": "tensor", "shape": "(2, 3)", "dtype": "float32"},
        {"key": "meta.id", "kind": "int", "shape": "", "dtype": ""},
    ]


def test_batch_table_shows_value_statistics_next_to_shapes_with_nans_counted():
    batch = {
        "x": torch.tensor([[1.0, float("nan")], [3.0, 5.0]]),
        "y": np.array([-2, 4], dtype=np.int16),
        "all_nan": np.full(3, np.nan),
        "flag": torch.tensor([True]),
        "half": torch.ones(2, dtype=torch.bfloat16),
        "name": "episode",
    }
    frame = batch_table(describe_batch(batch)).set_index("key")
    assert frame.columns.tolist() == ["kind", "shape", "dtype", "min", "mean", "max", "NaNs"]
    assert frame.loc["x", ["min", "mean", "max", "NaNs"]].tolist() == [1.0, 3.0, 5.0, 2 - 1]
    assert frame.loc["y", ["min", "mean", "max", "NaNs"]].tolist() == [-2.0, 1.0, 4.0, 0]
    assert frame.loc["half", "mean"] == 1.0
    assert frame.loc["all_nan", "NaNs"] == 3 and frame.loc["all_nan", ["min", "mean", "max"]].isna().all()
    for no_numbers in ("flag", "name"):  # booleans and strings have no statistics: blank, not zero
        assert frame.loc[no_numbers, ["min", "mean", "max", "NaNs"]].isna().all()
    shown = page(BackendsState(BackendRegistry(discover_plugins=False).snapshot(), batch=describe_batch(batch)))
    markup = shown.section("batch").to_html()
    assert "<th" in markup and ">NaNs<" in markup and ">3<" in markup


def test_styled_matrix_escapes_markup_in_error_messages():
    reg = BackendRegistry(discover_plugins=False)
    reg.record_import_error("evil", ImportError("<script>alert(1)</script>"))
    rendered = style_verb_matrix(verb_matrix(reg.snapshot())).to_html()
    assert "<script>" not in rendered and "&lt;script&gt;" in rendered


def test_docstrings_render_paragraphs_code_lists_titles_and_literal_blocks():
    doc = """Episodes this rank reads, as ``list[int]``.

    Reads `cfg.data.path` once.

    - the train split first
    - then the validation split,
      continued on a second line

    Parameters
    ----------
    cfg : TrainConfig

    Example::

        indices = backend.load_episode_indices(cfg)
    """
    rendered = docstring_html(doc)
    assert "<p>Episodes this rank reads, as <code>list[int]</code>.</p>" in rendered
    assert "<code>cfg.data.path</code>" in rendered
    assert (
        "<ul><li>the train split first</li><li>then the validation split, continued on a second line</li></ul>"
        in rendered
    )
    assert "<h5>Parameters</h5>" in rendered and "-----" not in rendered
    assert "<pre class='inspector-pre'>indices = backend.load_episode_indices(cfg)</pre>" in rendered
    assert "(no docstring)" in docstring_html(None)


@given(st.text(alphabet=st.sampled_from(list("<>&'\"`-* abc:\n")), max_size=80))
def test_docstring_rendering_escapes_every_character_of_the_text(doc):
    rendered = docstring_html(doc + "<script>alert(1)</script> <img src=x onerror=y>")
    assert "<script" not in rendered and "<img" not in rendered
    assert "&lt;script&gt;" in rendered


def test_the_verb_section_renders_the_docstring_in_page_and_panel_alike():
    markup = verb_html("backend_for('npz').build(cfg)", "build(cfg)", "Build the ``loaders``.\n\n- train", "npz.py")
    assert "<code>loaders</code>" in markup and "<li>train</li>" in markup and "defined in npz.py" in markup
    snap = BackendRegistry(discover_plugins=False).snapshot()
    state = BackendsState(
        snap,
        "npz",
        "build",
        "backend_for('npz').build(cfg)\n\nbuild(cfg)\n\nBuild.",
        verb_doc="Build the ``loaders``.",
        verb_defined_in="npz.py",
    )
    shown = page(state).section("verb").to_html()
    assert "<code>loaders</code>" in shown and "``" not in shown


def test_set_by_names_the_notebook_cell_not_a_temp_file():
    # A real IPython shell (and ipykernel's compiler) in a fresh interpreter: shells replace __main__.
    script = textwrap.dedent("""
        from IPython.core.interactiveshell import InteractiveShell
        from ipykernel.compiler import XCachingCompiler
        from inspector.views._cells import in_notebook_terms
        for compiler in (None, XCachingCompiler):
            InteractiveShell.clear_instance()
            shell = InteractiveShell.instance(**({"compiler_class": compiler} if compiler else {}))
            shell.run_cell("from inspector.backends import BackendRegistry", store_history=True)
            shell.run_cell("reg = BackendRegistry(discover_plugins=False)", store_history=True)
            shell.run_cell("y = 2\\nreg.set_active('npz')", store_history=True)
            print(in_notebook_terms(shell.user_ns["reg"].snapshot().active_set_by))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    captions = done.stdout.strip().splitlines()
    assert captions == ["set_active() at cell In[3], line 2 in <module>"] * 2, done.stdout


def test_set_by_text_without_a_shell_keeps_what_it_knows():
    assert in_notebook_terms("load_config(x) at <ipython-input-7-0a1b2c>:4 in <module>") == (
        "load_config(x) at cell In[7], line 4 in <module>"
    )
    assert in_notebook_terms("set_active() at /tmp/ipykernel_99/123456.py:2 in f") == (
        "set_active() at a notebook cell (not in this kernel's history), line 2 in f"
    )
    assert in_notebook_terms("load_config(x) at train.py:12 in main") == "load_config(x) at train.py:12 in main"
    reg = BackendRegistry(discover_plugins=False)
    reg.set_active("npz", set_by="load_config(x) at <ipython-input-7-0a1b2c>:4 in <module>")
    caption = style_verb_matrix(verb_matrix(reg.snapshot())).caption
    assert caption == "Active backend: npz (set by load_config(x) at cell In[7], line 4 in &lt;module&gt;)"
