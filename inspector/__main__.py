"""``python -m inspector`` is the ``inspector`` command.

``python -m`` puts the current folder first on ``sys.path``; the command takes it off again, as
the installed ``inspector`` script has it, so a ``csv.py`` or ``html.py`` there is never imported
in place of the standard library (``--import`` adds the folder back for the user's modules only).
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from inspector.cli import main

raise SystemExit(main())
