"""Set-up files agree with each other: pyproject, constraints, binder, Makefile, CI."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_binder_installs_this_project_with_an_extra_pyproject_declares() -> None:
    lines = [line.strip() for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()]
    editable = [line for line in lines if line.startswith("-e .")]
    assert len(editable) == 1
    extra = re.fullmatch(r"-e \.\[(\w+)\]", editable[0])
    assert extra and extra.group(1) in PYPROJECT["project"]["optional-dependencies"]
    assert any(line.startswith("--extra-index-url") and line.endswith("/whl/cpu") for line in lines)
    assert "-c ../constraints.txt" in lines  # the pins make lab uses (paths are relative to this file)


def test_binder_runtime_and_post_build() -> None:
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    post_build = (ROOT / "binder" / "postBuild").read_text()
    assert post_build.startswith("#!/bin/bash") and "\nset -e\n" in post_build


def test_pyproject_names_the_distribution_and_the_extras() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == "dispatch-inspector" and project["requires-python"] == ">=3.10"
    dependencies = " ".join(project["dependencies"])
    for name in ("torch", "numpy", "pandas", "matplotlib", "ipywidgets"):
        assert name in dependencies
    test_extra = " ".join(project["optional-dependencies"]["test"])
    for name in ("pytest", "hypothesis", "nbmake", "nbclient", "playwright", "pytest-timeout"):
        assert name in test_extra
    assert {"jupyterlab", "ipykernel"} <= {re.split(r"[<>=]", d)[0] for d in project["optional-dependencies"]["lab"]}
    assert (ROOT / "inspector" / "py.typed").exists()


def test_constraints_pin_the_local_cpu_torch_and_every_dependency() -> None:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.lower().replace("_", "-")] = version
    assert pins["torch"] == "2.13.0"
    for requirement in PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["test"]:
        name = re.split(r"[<>=;\[ ]", requirement)[0].lower().replace("_", "-")
        if "python_version < '3.11'" not in requirement:
            assert name in pins, f"{name} is not pinned in constraints.txt"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "CI=true" in ci
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "urlpath=lab/tree/notebooks/00_tour.ipynb" in readme
    makefile = (ROOT / "Makefile").read_text()
    assert 'torch==2.13.0' in makefile and "-c constraints.txt" in makefile


def test_test_modules_have_unique_basenames() -> None:
    # tests/ folders are not packages: pytest imports test modules by basename.
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
