"""Sample files for the demo backends, so each one's example config builds as it stands.

The ``npz`` and ``storage`` demos read a directory of episode files. ``example_configs()`` writes
a few small ones, once per process, into a private temporary directory (removed when the
process exits) and returns a config per backend that points at it: the Backends tab fills its
config box from these when the app loaded the demos, so "Build sample" works out of the box.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_root: list[Path] = []


def _sample_root() -> Path:
    """The process's sample directory (owner-only), made on first use and removed at exit."""
    with _lock:
        if not _root:
            root = Path(tempfile.mkdtemp(prefix="inspector-samples-"))
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            _root.append(root)
        return _root[0]


def example_configs() -> dict[str, dict[str, Any]]:
    """A config per demo backend that reads files, each pointing at sample files written for it."""
    from inspector.examples.data_backends.npz import write_example_episodes
    from inspector.examples.data_backends.storage import write_example_storage

    root = _sample_root()
    configs = {}
    for name, write in (("npz", write_example_episodes), ("storage", write_example_storage)):
        directory = root / name
        with _lock:
            if not directory.exists():
                write(directory)
        configs[name] = {"data": {"dataset_type": name, "path": str(directory), "batch_size": 4}}
    return configs
