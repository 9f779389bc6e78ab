"""The user's own modules to import before the inspector shows anything (``INSPECTOR_IMPORT``).

``inspector lab --import my_kernels`` sets ``INSPECTOR_IMPORT=my_kernels`` for JupyterLab, so
every kernel it starts imports ``my_kernels`` when ``inspector.show()`` opens the app: the
user's families and backends are registered before the app decides whether demos load. The
folder the command ran in travels as ``INSPECTOR_IMPORT_PATH`` and is on ``sys.path`` only while
those modules are imported, after the standard library: never on the servers' own path, where a
``html.py`` lying there would replace the standard library's.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import sysconfig
from collections.abc import Iterator

IMPORT_ENV = "INSPECTOR_IMPORT"
IMPORT_PATH_ENV = "INSPECTOR_IMPORT_PATH"
logger = logging.getLogger("inspector")


def import_user_modules() -> tuple[str, ...]:
    """Import each module named in ``INSPECTOR_IMPORT`` (comma-separated); return problems, one line each."""
    problems = []
    folder = os.environ.get(IMPORT_PATH_ENV)
    with folder_importable(folder) if folder else contextlib.nullcontext():
        problems = _import_each()
    return tuple(problems)


def _import_each() -> list[str]:
    problems = []
    for name in filter(None, (part.strip() for part in os.environ.get(IMPORT_ENV, "").split(","))):
        try:
            importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the app still opens, and says why the module is missing
            problems.append(f"{IMPORT_ENV}: could not import {name}: {type(exc).__name__}: {exc}")
            logger.warning(problems[-1])
    return problems


@contextlib.contextmanager
def folder_importable(folder: str) -> Iterator[None]:
    """``folder`` on ``sys.path`` for the block only, after the standard library (nothing to do if it is there)."""
    if folder in sys.path:
        yield
        return
    sys.path.insert(after_standard_library(), folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)


def after_standard_library() -> int:
    """The position in ``sys.path`` just after its last standard-library folder (its end when it lists none)."""
    library = {os.path.realpath(p) for key in ("stdlib", "platstdlib") if (p := sysconfig.get_path(key))}
    positions = [
        i
        for i, p in enumerate(sys.path)
        if p and (os.path.realpath(p) in library or os.path.basename(p) == "lib-dynload" or p.endswith(".zip"))
    ]
    return max(positions) + 1 if positions else len(sys.path)
