"""The backends facade beyond what tests/test_facades.py checks of every facade: UI-free with the demo
backends, and no entry point read at import."""

from __future__ import annotations

import json
import subprocess
import sys


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
