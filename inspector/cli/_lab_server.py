"""``python -m inspector.cli._lab_server ARGS``: ``jupyter lab ARGS``, without jupyter_server's token warning.

See NOTE [ The token warning ] in ``_lab.py``. Voila's server extension, when installed, puts a filter
for the deprecation warnings of traitlets in front of every other one as it is imported; so it is
imported first, then the one filter for the token warning goes in front of it.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

TOKEN_WARNING = "ServerApp.token config is deprecated"


def main() -> int:
    with contextlib.suppress(ImportError):
        import voila  # noqa: F401  (its filters first, so ours comes before them)
    warnings.filterwarnings("ignore", message=TOKEN_WARNING, category=DeprecationWarning)
    from jupyterlab.labapp import main as lab

    sys.argv[0] = "jupyter-lab"
    return int(lab() or 0)


if __name__ == "__main__":
    sys.exit(main())
