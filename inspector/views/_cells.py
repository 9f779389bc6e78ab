"""Call sites in a notebook named as the user knows them: ``cell In[3], line 2``, not a temp file.

IPython compiles each cell under a made-up file name: ``<ipython-input-3-1a2b3c>`` in a terminal
shell, ``/tmp/ipykernel_4242/1234567.py`` under ipykernel. The shell keeps the map from that name
to the cell's execution count (``get_ipython().compile._filename_map``, read through its
``format_code_name``), which is what its own tracebacks print as ``Cell In[3], line 2``. This
reads the same map, and only when IPython is already running (nothing is imported for it).
"""

from __future__ import annotations

import re
import sys

_SITE = re.compile(r"(<ipython-input-(\d+)-[0-9a-f]+>|(?:[^\s:]*[/\\])?ipykernel_\d+[/\\]\d+\.py):(\d+)")


def cell_label(filename: str, input_number: str | None = None) -> str | None:
    """``In[N]`` for a cell's compiled file name, from the running shell (or the name itself), else None."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if format_code_name is not None:
        found = format_code_name(filename)
        if found is not None:
            return str(found[1])
    return f"In[{input_number}]" if input_number else None


def in_notebook_terms(text: str) -> str:
    """``text`` with every notebook-cell call site (``<file>:<line>``) written as ``cell In[N], line L``."""

    def name(match: re.Match[str]) -> str:
        label = cell_label(match.group(1), match.group(2))
        where = f"cell {label}" if label else "a notebook cell (not in this kernel's history)"
        return f"{where}, line {match.group(3)}"

    return _SITE.sub(name, text)
