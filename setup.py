"""Build hook: the notebooks ship inside the wheel, so ``inspector lab`` works outside a checkout.

The metadata lives in ``pyproject.toml``; this only copies the notebooks and the glossary they
link (``notebooks/*.ipynb``, ``notebooks/*.md``) into ``inspector/notebooks/`` of the build, keeping one copy of
each in the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
NOTEBOOK_FILES = ("*.ipynb", "*.md")  # the notebooks and the glossary they link


class BuildWithNotebooks(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "inspector" / "notebooks"
        target.mkdir(parents=True, exist_ok=True)
        for pattern in NOTEBOOK_FILES:
            for notebook in sorted((HERE / "notebooks").glob(pattern)):
                shutil.copy2(notebook, target / notebook.name)


setup(cmdclass={"build_py": BuildWithNotebooks})
