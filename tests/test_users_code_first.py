"""The user's own families and backends are never replaced: by the demos, the app or any tab."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import inspector
from inspector.backends import DataBundle, backend_for, isolated_registry
from inspector.dispatch import (
    FAMILY_ENTRY_POINT_GROUP,
    CallContext,
    ImplRecord,
    Spec,
    default_registry,
    families,
    family_plugins,
    get_family,
    op_backend,
    register_family,
    resolve,
)
from inspector.dispatch.testing import isolated_dispatch


def _mine(*args: object) -> str:
    return "mine"


def build(cfg: object, ctx: object) -> DataBundle:
    """The user's own synthetic backend."""
    return DataBundle(dataset=[], train_loader=[], train_iters=0)


@pytest.fixture
def users_registrations() -> Iterator[None]:
    """Only the user's own ``attention`` family and ``synthetic`` backend (and PyTorch's torch_sdpa)."""
    from inspector.dispatch.torch_sdpa import ensure_registered

    with isolated_dispatch(keep_families=False), isolated_registry() as registry:
        ensure_registered()
        register_family("attention", [ImplRecord("attention", "mine", _mine, Spec.always())], "mine")
        registry.register_module("synthetic", sys.modules[__name__])
        yield


def test_importing_the_demos_keeps_the_users_family(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        from inspector.dispatch import CallContext, ImplRecord, Spec, register_family, resolve
        register_family("attention", [ImplRecord("attention", "mine", print, Spec.always())], "mine")
        import inspector.examples
        print(resolve("attention", CallContext("attention")).name)
        print(inspector.examples.skipped())
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    name, skipped = result.stdout.strip().splitlines()
    assert name == "mine" and "kept your 'attention' family (registered by __main__)" in skipped


def test_a_users_own_torch_sdpa_family_survives_the_inspectors_imports_and_app(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import torch
        from inspector.dispatch import CallContext, ImplRecord, Spec, register_family, resolve
        register_family("torch_sdpa", [ImplRecord("torch_sdpa", "mine", print, Spec.always())], "mine")
        import inspector
        from inspector.dispatch import torch_sdpa
        app = inspector.show(demos=True)
        for title in app.tab.titles:
            app.open(title)
        print(resolve("torch_sdpa", CallContext("torch_sdpa")).name)
        q = torch.randn(1, 2, 4, 8)
        print(torch_sdpa.predict(q, q, q).name)  # still PyTorch's own choice
        print([note for note in app.notes if "torch_sdpa" in note])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    name, predicted, notes = result.stdout.strip().splitlines()[-3:]
    assert name == "mine" and predicted == "FLASH_ATTENTION"
    assert "kept your 'torch_sdpa' family (registered by __main__)" in notes


def test_show_loads_no_demos_into_the_users_registries(users_registrations: None) -> None:
    app = inspector.show()
    assert set(families()) == {"attention", "torch_sdpa"}
    assert "demos not loaded" in app.notes[0]
    assert resolve("attention", CallContext("attention")).name == "mine"


def test_every_tab_leaves_the_users_registrations_alone(users_registrations: None) -> None:
    app = inspector.show()
    for title in app.tab.titles:
        app.open(title)
    assert get_family("attention").origin == __name__
    assert backend_for("synthetic").build(None, None).train_iters == 0  # still the user's


def test_show_demos_true_adds_the_demos_under_free_names_only(users_registrations: None) -> None:
    app = inspector.show(demos=True)
    assert {"attention", "rotary", "torch_sdpa"} <= set(families())
    assert resolve("attention", CallContext("attention")).name == "mine"
    assert any("kept your 'attention' family" in note for note in app.notes)
    assert any("kept your 'synthetic' data backend" in note for note in app.notes)


def test_show_loads_the_demos_into_empty_registries() -> None:
    with isolated_dispatch(keep_families=False), isolated_registry():
        app = inspector.show()
        assert {"attention", "rotary", "torch_sdpa"} <= set(families())
        assert app.notes == ()


PLUGIN = """
from inspector.dispatch import ImplRecord, Spec, register_family

def run(*a):
    return "plugin"

register_family("plugin_family", [ImplRecord("plugin_family", "only", run, Spec.always())], "only")
"""


def _install_distribution(root: Path, entry_points: str, modules: dict[str, str]) -> None:
    dist = root / "inspector_test_plugins-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: inspector-test-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(entry_points)
    for name, source in modules.items():
        (root / f"{name}.py").write_text(source)


def test_families_published_as_entry_points_are_discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_distribution(
        tmp_path,
        textwrap.dedent(f"""
        [{FAMILY_ENTRY_POINT_GROUP}]
        good = inspector_test_family_plugin
        exits = inspector_test_exiting_plugin
        klass = inspector_test_family_plugin:ImplRecord
    """),
        {
            "inspector_test_family_plugin": PLUGIN,
            "inspector_test_exiting_plugin": "import sys\nsys.exit(3)\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    default_registry().forget_plugins()  # as in a fresh process
    assert "plugin_family" in families()
    assert resolve("plugin_family", CallContext("plugin_family")).obj() == "plugin"
    found = {p.name: p for p in family_plugins()}
    assert found["good"].status == "loaded" and found["good"].families == ("plugin_family",)
    assert found["exits"].status == "failed" and found["exits"].detail == "SystemExit: 3"
    assert found["klass"].status == "failed" and "is a class" in found["klass"].detail


def test_op_backend_discovers_a_plugin_family_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_distribution(
        tmp_path,
        f"[{FAMILY_ENTRY_POINT_GROUP}]\ngood = inspector_test_selected_plugin\n",
        {"inspector_test_selected_plugin": PLUGIN},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    default_registry().forget_plugins()  # as in a fresh process: nothing has looked at entry points yet
    with op_backend(plugin_family="only"):
        assert resolve("plugin_family", CallContext("plugin_family")).origin == "context"  # the op_backend tier
