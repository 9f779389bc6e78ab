"""Every notebook in notebooks/ runs top to bottom in a fresh kernel, and is stored without outputs."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
# Wall-clock seconds per notebook (pytest-timeout), and per cell (nbclient); a notebook that
# needs longer is teaching too much at once.
BUDGET_S = int(os.environ.get("INSPECTOR_NOTEBOOK_BUDGET_S", "240"))


def _plain_ipython_dir(tmp_path: Path) -> Path:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text('c.InteractiveShell.colors = "nocolor"\n')
    return tmp_path / "ipython"


def _printed(cell: nbformat.NotebookNode) -> str:
    return "".join(output["text"] for output in cell.get("outputs", []) if output.get("output_type") == "stream")


@pytest.mark.slow
@pytest.mark.timeout(BUDGET_S)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_headless(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IPYTHONDIR", str(_plain_ipython_dir(tmp_path)))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=BUDGET_S, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} failed:\n{exc}", pytrace=False)
    errors = [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert errors == []
    undrawn = [
        index
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if str(output.get("data", {}).get("text/plain", "")).startswith("<Figure size")
        and "image/png" not in output.get("data", {})
    ]
    assert undrawn == [], f"{path.name}: figures shown as text in cells {undrawn} (add %matplotlib inline)"
    silent = [
        index
        for index, cell in enumerate(nb.cells)
        if "interpretation" in cell.metadata.get("tags", []) and not any(char.isdigit() for char in _printed(cell))
    ]
    assert silent == [], f"{path.name}: cells {silent} must print what this run's numbers show"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    with_outputs = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.get("outputs")]
    counted = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.get("execution_count")]
    assert with_outputs == [] and counted == [], f"{path.name}: clear outputs before committing"
