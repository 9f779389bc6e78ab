"""Build hook: the notebooks ship inside the wheel, so ``inspector lab`` works outside a checkout.

The metadata lives in ``pyproject.toml``; this only copies ``notebooks/*.ipynb`` into
``inspector/notebooks/`` of the build, keeping one copy of each notebook in the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithNotebooks(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "inspector" / "notebooks"
        target.mkdir(parents=True, exist_ok=True)
        for notebook in sorted((HERE / "notebooks").glob("*.ipynb")):
            shutil.copy2(notebook, target / notebook.name)


setup(cmdclass={"build_py": BuildWithNotebooks})
