"""A first run: every notebook says up front how long it takes, and opening one in JupyterLab does not mark it
modified before anything ran (JupyterLab writes the kernel's ``language_info`` into the notebook when the
kernel starts, so a notebook stored with the same one stays as it was)."""

from __future__ import annotations

import platform
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_says_how_long_it_takes_before_you_run_it(path: Path) -> None:
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "markdown" and "takes about" in first.source, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_is_stored_with_what_the_kernel_will_write_into_it(path: Path) -> None:
    from ipykernel.ipkernel import IPythonKernel

    metadata = nbformat.read(path, as_version=4).metadata
    assert dict(metadata.kernelspec) == {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    stored, kernel = dict(metadata.language_info), dict(IPythonKernel.language_info)
    assert stored.pop("version").split(".")[:2] == platform.python_version().split(".")[:2]
    kernel.pop("version")
    assert stored == kernel
