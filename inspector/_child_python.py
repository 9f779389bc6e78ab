"""The command line of a fresh Python that runs a module of this package, whatever folder it starts in.

NOTE [ Child interpreters ]
Every interpreter the inspector starts (loader and RPC workers, the RPC benchmark's ranks) runs
``python -P -c <bootstrap> <package-dir> ...``. ``-P`` keeps the working directory off ``sys.path``,
so a ``socket.py`` or ``textwrap.py`` where the user happens to be never replaces the standard
library's; the bootstrap then puts the folder this ``inspector`` was imported from just before the
first ``site-packages`` folder: after the standard library, which nothing may shadow, and before
every other third-party folder, so the child imports this very package and not another of that name.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE_PARENT = str(Path(__file__).resolve().parents[1])  # the folder holding the `inspector` package

# Pops the package folder from argv[1], so the child's own arguments keep their places after it.
PUT_PACKAGE_ON_PATH = (
    "import sys; sys.path.insert(next((i for i, e in enumerate(sys.path) "
    "if e.endswith(('site-packages', 'dist-packages'))), len(sys.path)), sys.argv.pop(1))"
)


def child_command(code: str, *args: str, executable: str = sys.executable) -> list[str]:
    """``python -P -c`` running ``code`` after the bootstrap, with ``args`` as ``sys.argv[1:]``."""
    joint = "\n" if "\n" in code else "; "
    return [executable, "-P", "-c", f"{PUT_PACKAGE_ON_PATH}{joint}{code}", PACKAGE_PARENT, *args]


def module_main(module: str) -> str:
    """Code that runs ``module.main()``."""
    return f"from {module} import main; main()"
