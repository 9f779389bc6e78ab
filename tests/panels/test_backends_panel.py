"""BackendsPanel driven through its real widgets (no frontend needed)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from waiting import WAIT_S

from inspector.backends import BackendRegistry, isolated_registry
from inspector.examples.data_backends import install, write_example_episodes
from inspector.panels.backends import BackendsPanel
from inspector.views._tables import TABLE_SCRIPT


def html_of(out) -> str:
    """The HTML an Output widget currently shows."""
    return "".join(o["data"].get("text/html", "") for o in out.outputs)


@pytest.fixture
def registry() -> BackendRegistry:
    reg = install(BackendRegistry(discover_plugins=False))
    reg.record_import_error(
        "parquet", ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow"), install="pip install pyarrow"
    )
    return reg


@pytest.fixture
def panel(registry: BackendRegistry) -> BackendsPanel:
    return BackendsPanel(registry)


def test_panel_opens_on_the_verb_matrix(panel: BackendsPanel) -> None:
    matrix = panel.last_matrix
    assert matrix is not None and {"npz", "synthetic", "parquet"} <= set(matrix.index)
    assert matrix.loc["npz", "stats"] == "missing" and matrix.loc["synthetic", "stats"] == "supported"
    assert matrix.loc["parquet", "build"] == "import error"
    shown = html_of(panel.matrix_out)
    assert "inspector-backend-matrix" in shown and "No module named &#39;pyarrow&#39;" in shown
    assert panel.status.value.endswith("failed to import, active: none (load_config() sets one)")


def test_a_supported_verb_shows_its_signature_and_docstring(panel: BackendsPanel) -> None:
    panel.select("npz", "load_episode_indices")
    assert "backend_for(&#x27;npz&#x27;).load_episode_indices(cfg)" in panel.verb_html.value
    assert "load_episode_indices(cfg: TrainConfig, ctx: BuildContext | None = None) -&gt; list[int]" in (
        panel.verb_html.value
    )
    assert "training episodes this rank reads" in panel.last_verb_text


def test_an_unsupported_verb_shows_the_error_code_would_raise(panel: BackendsPanel) -> None:
    panel.select("npz", "stats")
    assert panel.last_verb_text == (
        ">>> backend_for('npz').stats(cfg)\nTraceback (most recent call last):\n  ...\n"
        "MissingOperationError: Backend 'npz' does not implement 'stats'. Supported by: ['synthetic']."
    )
    assert "inspector-pre" in panel.verb_html.value


def test_a_backend_that_failed_to_import_shows_the_chained_error(panel: BackendsPanel) -> None:
    panel.select("parquet", "build")
    text = panel.last_verb_text
    assert "ModuleNotFoundError: No module named 'pyarrow'" in text
    assert "BackendImportError: Backend 'parquet' failed to import" in text and "install = pip install pyarrow" in text


def test_build_sample_shows_the_first_batch_structure(panel: BackendsPanel) -> None:
    panel.select("synthetic")
    assert "dataset_type: synthetic" in panel.config_text.value
    panel.build_sample(wait=True)
    assert panel.last_batch is not None
    assert [(f.key, f.shape, f.dtype) for f in panel.last_batch] == [
        ("observation", (4, 2, 4), "float32"),
        ("action", (4, 2, 2), "float32"),
        ("reward", (4, 2), "float32"),
        ("episode_index", (4,), "int64"),
        ("step_index", (4,), "int64"),
    ]
    assert "SyntheticTrajectories of 14 items; train_iters=4" in panel.build_html.value
    assert "(4, 2, 4)" in html_of(panel.build_out)
    assert not panel.registry.has_data_backend()  # building a sample does not pick the process's backend


def test_build_sample_of_an_npz_directory_given_in_configs(registry: BackendRegistry, tmp_path) -> None:
    write_example_episodes(tmp_path, episodes=2, steps=5)
    panel = BackendsPanel(registry, configs={"npz": {"data": {"dataset_type": "npz", "path": str(tmp_path)}}})
    panel.select("npz")
    panel.build_button.click()
    assert panel.job.wait(WAIT_S)
    assert [f.key for f in panel.last_batch or ()] == ["action", "observation", "reward", "episode_index", "step_index"]


def test_the_apps_backends_tab_builds_every_demo_sample_out_of_the_box() -> None:
    import inspector

    panel = inspector.show(demos=True).open("Backends")
    for name in ("npz", "storage", "synthetic"):
        panel.select(name)
        assert "/path/to" not in panel.config_text.value
        panel.build_sample(wait=True)
        assert panel.last_build_error is None and panel.last_batch, (name, panel.build_html.value)


def test_a_failing_build_is_shown_as_a_readable_message(registry: BackendRegistry, tmp_path) -> None:
    missing = {"npz": {"data": {"dataset_type": "npz", "path": str(tmp_path / "no such directory")}}}
    panel = BackendsPanel(registry, configs=missing)
    panel.select("npz")
    panel.build_sample(wait=True)
    assert isinstance(panel.last_build_error, FileNotFoundError)
    assert "<b>FileNotFoundError</b>" in panel.build_html.value and "Traceback" not in panel.build_html.value
    assert panel.last_batch is None


def test_bad_config_text_is_reported_beside_the_config_box(panel: BackendsPanel) -> None:
    panel.config_text.value = "data: [unclosed"
    panel.build_button.click()
    assert "ConfigError" in panel.config_errors.widget.value and "not valid YAML" in panel.config_errors.widget.value
    assert panel.config_errors.widget in panel.config_box.children and panel.config_text in panel.config_box.children
    assert panel.errors.widget.value == ""
    panel.config_text.value = "data:\n  dataset_type: synthetc\n"
    panel.build_button.click()
    assert "Unknown dataset_type &#x27;synthetc&#x27;. Did you mean &#x27;synthetic&#x27;?" in (
        panel.config_errors.widget.value
    )


def test_a_config_error_clears_the_batch_built_before_it(panel: BackendsPanel) -> None:
    panel.select("synthetic")
    panel.build_sample(wait=True)
    assert panel.last_batch is not None and panel.job.label.value == "done" and panel.build_out.outputs
    panel.config_text.value = panel.config_text.value.replace("batch_size: 4", "batch_size: 0")
    panel.build_button.click()
    assert "batch_size" in panel.config_errors.widget.value
    assert panel.last_batch is None and panel.job.label.value == "" and panel.build_out.outputs == ()
    assert panel.build_html.value == "" and "Sample batch" not in panel.static_html()
    panel.config_text.value = panel.config_text.value.replace("batch_size: 0", "batch_size: 4")
    panel.build_button.click()
    assert panel.job.wait(60) and panel.last_batch is not None and panel.config_errors.widget.value == ""


def test_building_a_backend_that_failed_to_import_explains_the_fix(panel: BackendsPanel) -> None:
    panel.select("parquet")
    panel.build_button.click()
    assert "BackendImportError" in panel.config_errors.widget.value
    assert "pip install pyarrow" in panel.config_errors.widget.value


def test_the_build_button_is_disabled_while_a_sample_builds(panel: BackendsPanel) -> None:
    assert not panel.build_button.disabled and panel.job.progress.layout.display == "none"
    release = threading.Event()
    panel.job.start(lambda report, cancelled: release.wait(10), lambda _r: None, lambda _e: None)
    assert panel.build_button.disabled and panel.job.progress.layout.display is None
    release.set()
    assert panel.job.wait(10)
    assert not panel.build_button.disabled and panel.job.progress.layout.display == "none"
    panel.select("npz")  # a build that fails re-enables the button too
    panel.build_sample(wait=True)
    assert panel.last_build_error is not None and not panel.build_button.disabled


def test_refresh_picks_up_registrations_and_the_active_backend(panel: BackendsPanel, registry) -> None:
    panel.select("npz", "describe")
    registry.register("legacy", lambda cfg, ctx: None)
    registry.load_config({"data": {"dataset_type": "synthetic"}})
    panel.refresh()
    assert panel.last_matrix is not None and panel.last_matrix.loc["synthetic", "status"] == "active"
    assert "legacy" in panel.backend.options
    assert (panel.backend.value, panel.verb.value) == ("npz", "describe")
    assert panel.status.value.endswith("active: synthetic")


def test_selecting_an_unknown_backend_lists_the_known(panel: BackendsPanel) -> None:
    with pytest.raises(KeyError, match="Backends: "):
        panel.select("nope")


def test_static_html_shows_matrix_import_errors_and_the_sample(panel: BackendsPanel) -> None:
    panel.select("synthetic")
    panel.build_sample(wait=True)
    page = panel.static_html()
    assert "inspector-backend-matrix" in page and "Import errors" in page and "Sample batch" in page
    assert page.replace(TABLE_SCRIPT, "").count("<script") == 0  # only the tables' own sort/filter script
    assert "Sample batch" in panel._repr_mimebundle_()["text/html"]


def test_the_default_panel_reads_the_default_registry_with_the_demos() -> None:
    with isolated_registry(keep_backends=True):
        panel = BackendsPanel()
        assert {"npz", "synthetic"} <= set(panel.backend.options)


def test_the_inspector_opens_a_backends_tab() -> None:
    from inspector.panels.app import Inspector

    app = Inspector()
    panel = app.open("Backends")
    assert isinstance(panel, BackendsPanel) and panel.widget in app.tab.children


@pytest.fixture(autouse=True)
def _restore_default_registry() -> Iterator[None]:
    with isolated_registry(keep_backends=True):
        yield


def test_a_second_build_while_one_runs_is_refused_and_keeps_the_first(tmp_path) -> None:
    import threading

    from inspector.panels.backends import BackendsPanel

    panel = BackendsPanel()
    release = threading.Event()
    panel.job.start(lambda report, cancelled: release.wait(10), lambda _r: None, lambda _e: None)
    panel.build_html.value = "first build"
    panel.guard(panel.build_sample)()
    assert "still being built" in panel.errors.widget.value  # called outside the button's box
    assert panel.build_html.value == "first build"
    release.set()
    assert panel.job.wait(10)
