"""Plugins: a real distribution (``*.dist-info`` with entry points) on ``sys.path`` is discovered lazily."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import inspector.backends as backends
from inspector.backends import ENTRY_POINT_GROUP, BackendImportError, BackendRegistry, isolated_registry

MODULES = ("demo_backend_plugin", "broken_backend_plugin", "selfreg_backend_plugin")

ENTRY_POINTS = f"""
[{ENTRY_POINT_GROUP}]
demo = demo_backend_plugin
broken = broken_backend_plugin
legacy = demo_backend_plugin:legacy_build
notabackend = demo_backend_plugin:CONSTANT
synthetic = demo_backend_plugin
selfreg = selfreg_backend_plugin
"""

DEMO = '''
import os
from pathlib import Path

from inspector.backends import DataBundle

if os.environ.get("PLUGIN_MARKER"):
    Path(os.environ["PLUGIN_MARKER"]).write_text("imported")

CONSTANT = 3


def build(cfg, ctx):
    """Build the plugin's data."""
    return DataBundle(dataset=[1, 2, 3], train_loader=[[1, 2, 3]], train_iters=1)


def stats(cfg):
    """Plugin statistics."""
    return {"n": 3}


def legacy_build(cfg, ctx):
    return "legacy"
'''

BROKEN = "import nonexistent_dependency_for_inspector_tests\n"

SELFREG = """
import sys

from inspector.backends import DataBundle, available_backends, register_module


def build(cfg, ctx):
    return DataBundle(dataset=[], train_loader=[])


available_backends()  # a plugin that looks up backends while it is being discovered
register_module("selfreg", sys.modules[__name__])
"""


def write_plugin_distribution(site: Path) -> Path:
    """A minimal installed distribution: modules plus a dist-info holding METADATA and entry points."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "demo_backend_plugin.py").write_text(textwrap.dedent(DEMO))
    (site / "broken_backend_plugin.py").write_text(BROKEN)
    (site / "selfreg_backend_plugin.py").write_text(textwrap.dedent(SELFREG))
    info = site / "demo_backend_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-backend-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return site


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = write_plugin_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    # The self-registering plugin registers on the default registry at import: put it back after.
    with isolated_registry(keep_backends=True):
        yield site
    for name in MODULES:
        sys.modules.pop(name, None)


class _Placeholder:
    def build(self, cfg, ctx):
        return None


def test_plugins_are_registered_and_failures_recorded(plugin_site):
    reg = BackendRegistry()
    reg.register_module("synthetic", _Placeholder())
    assert reg.available_backends() == ["demo", "legacy", "selfreg", "synthetic"]
    assert reg.backend_for("demo").stats(None) == {"n": 3}
    assert reg.backend_for("legacy").build(None, None) == "legacy"
    statuses = {p.name: p.status for p in reg.plugins()}
    assert statuses == {
        "broken": "failed",
        "demo": "registered",
        "legacy": "registered",
        "notabackend": "failed",
        "selfreg": "registered",
        "synthetic": "shadowed",
    }
    assert {p.distribution for p in reg.plugins()} == {"demo-backend-plugin 0.1"}


def test_a_plugin_that_fails_to_import_raises_the_import_shape_on_lookup(plugin_site):
    reg = BackendRegistry()
    with pytest.raises(BackendImportError) as exc:
        reg.backend_for("broken")
    assert isinstance(exc.value.__cause__, ModuleNotFoundError)
    assert exc.value.missing_module == "nonexistent_dependency_for_inspector_tests"
    assert exc.value.install == "fix or reinstall demo-backend-plugin 0.1"
    assert "source = plugin broken = broken_backend_plugin (distribution demo-backend-plugin 0.1)" in str(exc.value)
    failure = next(f for f in reg.snapshot().import_errors if f.name == "broken")
    assert failure.error_type == "ModuleNotFoundError" and not failure.shadowed


def test_an_entry_point_that_is_not_a_backend_is_recorded_with_why(plugin_site):
    reg = BackendRegistry()
    with pytest.raises(BackendImportError, match="neither a backend with build") as exc:
        reg.backend_for("notabackend")
    assert isinstance(exc.value.__cause__, TypeError)


def test_discovery_is_lazy_and_runs_once(plugin_site):
    reg = BackendRegistry()
    assert reg.snapshot().plugins_discovered is True
    assert "demo_backend_plugin" in sys.modules
    fresh = BackendRegistry()
    assert fresh._plugins is None  # nothing read until the first lookup
    (plugin_site / "demo_backend_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nlate = demo_backend_plugin\n"
    )
    assert "late" not in reg.available_backends()


def test_discovery_can_be_turned_off(plugin_site):
    reg = BackendRegistry(discover_plugins=False)
    assert reg.available_backends() == [] and reg.plugins() == ()
    assert reg.snapshot().plugins_discovered is False


def test_the_default_registry_discovers_plugins_inside_an_isolated_registry(plugin_site):
    with isolated_registry(discover_plugins=True):
        assert "demo" in backends.available_backends()
        assert backends.backend_for("demo").supports("stats")
    with isolated_registry():
        assert "demo" not in backends.available_backends()


def test_importing_the_package_neither_loads_nor_raises_for_plugins(plugin_site, tmp_path):
    marker = tmp_path / "marker"
    code = textwrap.dedent(
        """
        import json, os, sys
        import inspector.backends as b
        before = os.path.exists(os.environ["PLUGIN_MARKER"])
        names = b.available_backends()
        try:
            b.backend_for("broken")
        except RuntimeError as exc:
            broken = type(exc.__cause__).__name__
        print(json.dumps({"before": before, "after": os.path.exists(os.environ["PLUGIN_MARKER"]),
                          "names": names, "broken": broken}))
        """
    )
    env = {**os.environ, "PLUGIN_MARKER": str(marker), "PYTHONPATH": str(plugin_site)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    report = json.loads(result.stdout)
    assert report["before"] is False and report["after"] is True
    assert {"demo", "legacy", "selfreg", "synthetic"} <= set(report["names"])
    assert report["broken"] == "ModuleNotFoundError"
    assert "plugin backend 'broken' failed to load" in result.stderr
