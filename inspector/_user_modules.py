"""The user's own modules to import before the inspector shows anything (``INSPECTOR_IMPORT``).

``inspector lab --import my_kernels`` sets ``INSPECTOR_IMPORT=my_kernels`` for JupyterLab, so
every kernel it starts imports ``my_kernels`` when ``inspector.show()`` opens the app: the
user's families and backends are registered before the app decides whether demos load.
"""

from __future__ import annotations

import importlib
import logging
import os

IMPORT_ENV = "INSPECTOR_IMPORT"
logger = logging.getLogger("inspector")


def import_user_modules() -> tuple[str, ...]:
    """Import each module named in ``INSPECTOR_IMPORT`` (comma-separated); return problems, one line each."""
    problems = []
    for name in filter(None, (part.strip() for part in os.environ.get(IMPORT_ENV, "").split(","))):
        try:
            importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the app still opens, and says why the module is missing
            problems.append(f"{IMPORT_ENV}: could not import {name}: {type(exc).__name__}: {exc}")
            logger.warning(problems[-1])
    return tuple(problems)
