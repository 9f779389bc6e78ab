"""The public facade: complete, sorted the way ruff sorts it, and free of UI imports."""

from __future__ import annotations

import json
import subprocess
import sys

import inspector.backends as backends


def test_all_lists_every_public_name_exactly_once():
    public = {n for n in dir(backends) if not n.startswith("_") and n != "annotations"}
    assert set(backends.__all__) == public
    assert len(backends.__all__) == len(set(backends.__all__))


def test_all_is_sorted():
    assert backends.__all__ == sorted(backends.__all__)


def test_engine_and_demo_backends_import_no_ui_library():
    code = (
        "import json, sys; import inspector.backends, inspector.examples.data_backends; "
        "print(json.dumps([m for m in ('ipywidgets', 'pandas', 'matplotlib', 'IPython') if m in sys.modules]))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == []


def test_importing_the_engine_reads_no_entry_points():
    code = "import json, inspector.backends as b; print(json.dumps(b.default_registry()._plugins is None))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) is True
