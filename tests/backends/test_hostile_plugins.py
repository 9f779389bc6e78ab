"""Plugins that exit, raise BaseException or point at a class fail alone; every other lookup keeps working."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from inspector.backends import (
    ENTRY_POINT_GROUP,
    BackendImportError,
    BackendRegistry,
    InvalidBackendError,
)

MODULES = ("exiting_plugin", "base_raising_plugin", "interrupting_plugin", "classy_plugin", "good_plugin")

SOURCES = {
    "exiting_plugin": "import sys\nsys.exit('this plugin refuses to run here')\n",
    "base_raising_plugin": "class Fatal(BaseException):\n    pass\n\nraise Fatal('from a plugin')\n",
    "interrupting_plugin": "raise KeyboardInterrupt\n",
    "classy_plugin": textwrap.dedent(
        """
        class ParquetBackend:
            def build(self, cfg, ctx):
                return None

        backend = ParquetBackend()
        """
    ),
    "good_plugin": "def build(cfg, ctx):\n    return 'good'\n",
}

ENTRY_POINTS = f"""
[{ENTRY_POINT_GROUP}]
exits = exiting_plugin
fatal = base_raising_plugin
klass = classy_plugin:ParquetBackend
instance = classy_plugin:backend
good = good_plugin
"""


def write_distribution(site: Path, entry_points: str = ENTRY_POINTS) -> Path:
    site.mkdir(parents=True, exist_ok=True)
    for name, text in SOURCES.items():
        (site / f"{name}.py").write_text(text)
    info = site / "hostile_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site


@pytest.fixture
def hostile_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = write_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in MODULES:
        sys.modules.pop(name, None)


def _registry_with_a_builtin() -> BackendRegistry:
    reg = BackendRegistry()
    reg.register("builtin", lambda cfg, ctx: "builtin")
    return reg


def test_a_plugin_that_calls_sys_exit_is_a_failed_plugin(hostile_site):
    reg = _registry_with_a_builtin()
    assert reg.backend_for("builtin").build(None, None) == "builtin"  # no SystemExit escapes discovery
    statuses = {p.name: p.status for p in reg.plugins()}
    assert statuses["exits"] == "failed" and statuses["good"] == "registered"
    with pytest.raises(BackendImportError) as exc:
        reg.backend_for("exits")
    assert isinstance(exc.value.__cause__, SystemExit)
    assert "failed to import: SystemExit: this plugin refuses to run here" in str(exc.value)


def test_a_plugin_raising_any_base_exception_is_a_failed_plugin(hostile_site):
    reg = _registry_with_a_builtin()
    assert reg.available_backends() == ["builtin", "good", "instance"]
    failed = {p.name: p.detail for p in reg.plugins() if p.status == "failed"}
    assert failed["fatal"] == "Fatal: from a plugin"
    snapshot = {f.name: f for f in reg.snapshot().import_errors}
    assert snapshot["fatal"].error_type == "Fatal" and snapshot["exits"].error_type == "SystemExit"


def test_an_entry_point_resolving_to_a_class_is_refused_at_discovery(hostile_site):
    reg = _registry_with_a_builtin()
    plugin = next(p for p in reg.plugins() if p.name == "klass")
    assert plugin.status == "failed" and "resolves to the class 'ParquetBackend'" in plugin.detail
    with pytest.raises(BackendImportError) as exc:
        reg.backend_for("klass")
    assert isinstance(exc.value.__cause__, InvalidBackendError)
    assert "Point the entry point at the module, or at an instance (e.g. backend = ParquetBackend())" in str(exc.value)
    assert reg.backend_for("instance").build(None, None) is None  # the instance form is a backend


def test_keyboard_interrupt_during_discovery_is_not_swallowed(tmp_path, monkeypatch):
    site = write_distribution(
        tmp_path / "site", f"[{ENTRY_POINT_GROUP}]\nearly = good_plugin\nstop = interrupting_plugin\n"
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        reg = BackendRegistry()
        with pytest.raises(KeyboardInterrupt):
            reg.available_backends()
        assert reg._plugins is None  # discovery did not finish, so the next lookup tries again
        (site / "interrupting_plugin.py").write_text(SOURCES["good_plugin"])  # the user fixed it
        importlib.invalidate_caches()
        assert reg.available_backends() == ["early", "stop"]
        # The plugin registered before the interrupt is its own, not shadowed by itself.
        assert {p.name: p.status for p in reg.plugins()} == {"early": "registered", "stop": "registered"}
    finally:
        sys.modules.pop("interrupting_plugin", None)
        sys.modules.pop("good_plugin", None)


def test_a_process_with_an_exiting_plugin_keeps_every_lookup(hostile_site):
    code = textwrap.dedent(
        """
        import json
        import inspector.examples
        from inspector.backends import backend_for, available_backends, load_config
        cfg = load_config({"data": {"dataset_type": "synthetic"}})
        print(json.dumps({"names": available_backends(), "synthetic": backend_for("synthetic").supports("build")}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(hostile_site)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["synthetic"] is True and "good" in report["names"] and "exits" not in report["names"]
    assert "plugin backend 'exits' failed to load: SystemExit" in result.stderr
