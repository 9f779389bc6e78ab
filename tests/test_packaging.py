"""Set-up files agree with each other: pyproject, constraints, binder, Makefile, CI."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

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


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=;\[ ]", r)[0].lower() for r in requirements}


def test_pyproject_names_the_distribution_and_the_extras() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == "dispatch-inspector"
    extras = project["optional-dependencies"]
    test_extra = " ".join(extras["test"])
    for name in ("pytest", "hypothesis", "nbmake", "nbclient", "playwright", "pytest-timeout", "omegaconf"):
        assert name in test_extra
    assert (ROOT / "inspector" / "py.typed").exists()


def test_the_engine_depends_on_torch_numpy_and_pyyaml_only() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert _names(PYPROJECT["project"]["dependencies"]) == {"torch", "numpy", "pyyaml"}
    assert _names(extras["ui"]) == {"pandas", "matplotlib", "ipywidgets", "jinja2"}
    assert "dispatch-inspector[ui]" in extras["lab"]  # lab brings the UI along
    assert {"jupyterlab", "ipykernel", "voila"} <= _names(extras["lab"])
    assert "dispatch-inspector[lab]" in extras["test"]


def test_the_extras_the_code_names_are_the_extras_pyproject_declares() -> None:
    from inspector._extras import DISTRIBUTION, EXTRAS

    declared = PYPROJECT["project"]["optional-dependencies"]
    assert PYPROJECT["project"]["name"] == DISTRIBUTION
    assert set(EXTRAS["ui"]) == _names(declared["ui"])
    assert set(EXTRAS["lab"]) <= _names(declared["lab"])


def test_python_and_torch_floors_are_what_is_tested() -> None:
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"  # constraints.txt pins need 3.11+
    torch = next(r for r in PYPROJECT["project"]["dependencies"] if r.startswith("torch"))
    assert torch == "torch>=2.13"  # the pinned, tested 2.13.0; no CI job runs an older torch
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py311"
    readme = (ROOT / "README.md").read_text()
    assert "Python 3.11+" in readme and "3.10" not in readme


def test_the_license_file_matches_the_metadata() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text


def test_constraints_pin_the_local_cpu_torch_and_every_dependency() -> None:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.lower().replace("_", "-")] = version
    assert pins["torch"] == "2.13.0"
    project = PYPROJECT["project"]
    requirements = [r for extra in project["optional-dependencies"].values() for r in extra]
    for name in _names(project["dependencies"] + requirements) - {"dispatch-inspector"}:
        assert name.replace("_", "-") in pins, f"{name} is not pinned in constraints.txt"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "CI=true" in ci
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "urlpath=lab/tree/notebooks/00_tour.ipynb" in readme
    makefile = (ROOT / "Makefile").read_text()
    assert "torch==2.13.0" in makefile and "-c constraints.txt" in makefile


def test_test_modules_have_unique_basenames() -> None:
    # tests/ folders are not packages: pytest imports test modules by basename.
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


@pytest.mark.parametrize("blocked", ["ipywidgets", "pandas", "matplotlib"])
def test_panels_without_the_ui_extra_name_the_extra_to_install(blocked: str) -> None:
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"  # as if it were not installed
        "import inspector.backends, inspector.dispatch  # the engine does not care\n"
        "try:\n    import inspector; inspector.show()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc.extra, exc.missing, '|', exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.startswith(f"MissingExtraError ui ('{blocked}',) | inspector.panels needs the [ui] extra"), (
        result.stdout + result.stderr
    )
    assert "Install it with: pip install 'dispatch-inspector[ui]'" in result.stdout


@pytest.mark.parametrize(
    ("code", "feature"),
    [
        ("import inspector; inspector.to_html('r.html')", "inspector.report (and inspector.to_html)"),
        ("import inspector.views.dispatch", "inspector.views"),
        ("from inspector.report import to_html", "inspector.report (and inspector.to_html)"),
    ],
)
def test_the_report_and_views_without_the_ui_extra_name_the_extra_to_install(
    code: str, feature: str, tmp_path: Path
) -> None:
    blocked = (
        f"import sys; sys.modules['pandas'] = None\ntry:\n    {code}\n"
        "except ImportError as exc:\n    print(type(exc).__name__, '|', exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    expected = f"MissingExtraError | {feature} needs the [ui] extra"
    assert result.stdout.startswith(expected), result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []  # no half-written report


# --- the slim install: the wheel, next to torch, in a fresh venv ---------------------------

ENGINE_DISTRIBUTIONS = ("torch", "numpy", "pyyaml")
UI_AND_JUPYTER = (
    "pandas",
    "matplotlib",
    "ipywidgets",
    "jupyterlab",
    "jupyter-server",
    "ipykernel",
    "voila",
    "notebook",
    "nbformat",
    "ipython",
)


def _closure(names: tuple[str, ...]) -> list[Any]:
    """The installed distributions ``names`` need, transitively (markers evaluated, extras not taken)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    seen: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        seen[name] = dist
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(seen.values())


def _torch_site(folder: Path) -> Path:
    """A site folder holding (as links) exactly torch, numpy, PyYAML and what they need: an environment
    that has torch, as a training job's would, without copying gigabytes."""
    folder.mkdir()
    for dist in _closure(ENGINE_DISTRIBUTIONS):
        tops = {PurePosixPath(str(f)).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        for top in tops:
            target = Path(str(dist.locate_file(top)))
            if target.exists() and not (folder / top).exists():
                (folder / top).symlink_to(target)
    return folder


def _copy_sources(folder: Path) -> Path:
    """What the sdist holds, so building the wheel leaves nothing behind in the checkout."""
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, folder / name)
    shutil.copytree(ROOT / "inspector", folder / "inspector", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", folder / "notebooks")
    return folder


@pytest.mark.slow
def test_the_wheel_installs_slim_and_the_engine_and_cli_work_without_the_ui(tmp_path: Path) -> None:
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INPUT": "1", "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONPATH", None)

    def run(*command: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(c) for c in command], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
        )
        if check:
            assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
        return result

    (tmp_path / "src").mkdir()
    source = _copy_sources(tmp_path / "src")
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", wheels, source)
    (wheel,) = wheels.glob("dispatch_inspector-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in archive.namelist())
        shipped = sorted(n for n in archive.namelist() if n.startswith("inspector/notebooks/"))
        notebook_files = [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "notebooks").glob("*.md")]
        assert "inspector/notebooks/glossary.md" in shipped
        assert shipped == sorted(f"inspector/notebooks/{p.name}" for p in notebook_files)
        assert {
            "inspector/_voila/app.ipynb",
            "inspector/_voila/voila/templates/inspector/index.html.j2",
            "inspector/_voila/voila/templates/inspector/conf.json",
        } <= set(archive.namelist())  # inspector app

    venv = tmp_path / "fresh"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    own_site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (own_site / "torch_env.pth").write_text(f"{_torch_site(tmp_path / 'torch-site')}\n")
    before = {p.name for p in own_site.iterdir()}

    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-index",
        "--find-links",
        wheels,
        "dispatch-inspector",
    )
    added = {p.name for p in own_site.iterdir()} - before
    assert {n for n in added if n.endswith(".dist-info")} == {wheel.name.split("-")[0] + "-0.1.0.dist-info"}, added

    check = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        from importlib.metadata import metadata
        import inspector, inspector.backends, inspector.dispatch, inspector.loader, inspector.rpc, inspector.examples
        cfg = inspector.backends.load_config({{"data": {{"dataset_type": "synthetic"}}, "model": {{"h": 1}}}})
        meta = metadata("dispatch-inspector")
        print(json.dumps({{
            "absent": [m for m in {list(UI_AND_JUPYTER)!r} if importlib.util.find_spec(m.replace("-", "_")) is None],
            "model": cfg.model,
            "license": meta["License-Expression"],
            "requires_python": meta["Requires-Python"],
            "extras": sorted(meta.get_all("Provides-Extra")),
        }}))
        """
    )
    facts = json.loads(run(python, "-c", check).stdout)
    assert facts["absent"] == [m for m in UI_AND_JUPYTER]  # no Jupyter, pandas or matplotlib came along
    assert facts["model"] == {"h": 1}
    assert facts["license"] == "Apache-2.0" and facts["requires_python"] == ">=3.11"
    assert facts["extras"] == ["lab", "test", "ui"]

    inspector = venv / "bin" / "inspector"
    explained = run(inspector, "explain", "rotary", "--head-dim", "32")
    assert explained.stdout.strip().endswith("=> fused (origin=chain)")
    plan = tmp_path / "plan.json"
    run(
        python,
        "-c",
        f"from inspector.rpc import TopologyPlan; open({str(plan)!r}, 'w').write("
        "TopologyPlan.full_mesh(2, 2).to_json())",
    )
    assert run(inspector, "rpc", "check", plan).stdout.startswith("OK: init_rpc would accept this plan")

    for code, feature in (
        ("import inspector.panels", "inspector.panels"),
        ("import inspector; inspector.show()", "inspector.panels"),
        ("from inspector.panels import DispatchPanel", "inspector.panels"),
        ("import inspector; inspector.to_html('r.html')", "inspector.report (and inspector.to_html)"),
        ("import inspector.views.loader", "inspector.views"),
    ):
        refused = run(python, "-c", code, check=False)
        assert refused.returncode == 1
        last = refused.stderr.strip().splitlines()[-1]
        assert last.startswith(f"inspector._extras.MissingExtraError: {feature} needs the [ui] extra"), last
        assert "Install it with: pip install 'dispatch-inspector[ui]'" in last
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    copied = subprocess.run(
        [str(python), "-c", "from inspector.cli._lab import _default_folder; print(_default_folder())"],
        capture_output=True,
        text=True,
        env=env,
        cwd=outside,
        timeout=120,
    )
    assert copied.returncode == 0, copied.stderr
    assert (outside / copied.stdout.strip() / "00_tour.ipynb").is_file()  # the installed notebooks, copied once
    assert (outside / copied.stdout.strip() / "glossary.md").is_file()  # with the glossary the tour links
    report = run(inspector, "report", tmp_path / "r.html", check=False)
    assert report.returncode == 2 and len(report.stderr.splitlines()) == 1
    assert "needs the [ui] extra" in report.stderr and not (tmp_path / "r.html").exists()
