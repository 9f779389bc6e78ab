"""The command never imports a module from the working folder that the user did not name with ``--import``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import PROCESS_WAIT_S

from inspector.cli._common import UsageError, check_module_name, import_modules

# Standard-library modules the command imports lazily (reports, tables, argument parsing, JSON, ...).
SHADOWS = (
    "html",
    "csv",
    "json",
    "textwrap",
    "difflib",
    "base64",
    "secrets",
    "tempfile",
    "string",
    "shlex",
    "statistics",
    "decimal",
    "fractions",
    "zipfile",
    "tarfile",
    "uuid",
    "platform",
    "locale",
    "gettext",
)
USER_MODULE = (
    "from inspector.dispatch import ImplRecord, Spec, register_family\n"
    "register_family('mine', [ImplRecord('mine', 'only', len, Spec.always())], 'only')\n"
)


def plant(folder: Path) -> Path:
    """A folder whose ``csv.py``, ``html.py``, ... each leave a mark when imported, and the user's own module."""
    marks = folder / "marks"
    marks.mkdir()
    for name in SHADOWS:
        (folder / f"{name}.py").write_text(f"open({str(marks / name)!r}, 'w').close()\n")
    (folder / "my_kernels.py").write_text(USER_MODULE)
    return marks


def command(*args: str, cwd: Path, as_module: bool) -> subprocess.CompletedProcess[str]:
    script = [sys.executable, "-m", "inspector"] if as_module else [str(Path(sys.executable).with_name("inspector"))]
    return subprocess.run([*script, *args], capture_output=True, text=True, timeout=PROCESS_WAIT_S, cwd=cwd)


@pytest.mark.slow
@pytest.mark.parametrize("as_module", [False, True], ids=["inspector", "python -m inspector"])
def test_report_and_explain_never_import_a_stray_module_from_the_working_folder(tmp_path: Path, as_module: bool):
    marks = plant(tmp_path)
    report = command("report", "out.html", cwd=tmp_path, as_module=as_module)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "out.html").stat().st_size > 0
    explained = command("explain", "mine", "--import", "my_kernels", cwd=tmp_path, as_module=as_module)
    assert explained.returncode == 0, explained.stderr
    assert "=> only" in explained.stdout  # the named module was imported from the folder
    with_import = command("report", "out2.html", "--import", "my_kernels", cwd=tmp_path, as_module=as_module)
    assert with_import.returncode == 0, with_import.stderr
    assert sorted(p.name for p in marks.iterdir()) == []


def test_the_folder_is_on_the_path_only_while_the_named_modules_import(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "path_probe_for_inspector.py").write_text(
        "import sys, os\nimport path_probe_for_inspector as me\nme.seen = os.getcwd() in sys.path\n"
        "me.before_site = sys.path.index(os.getcwd()) < min(\n"
        "    [i for i, p in enumerate(sys.path) if 'site-packages' in p] or [len(sys.path)])\n"
        "me.after_stdlib = sys.path.index(os.getcwd()) > sys.path.index(os.path.dirname(os.__file__))\n"
    )
    before = list(sys.path)
    try:
        import_modules(["path_probe_for_inspector"])
        probe = sys.modules["path_probe_for_inspector"]
        assert probe.seen and probe.after_stdlib and probe.before_site
        assert sys.path == before
    finally:
        sys.modules.pop("path_probe_for_inspector", None)
        sys.path[:] = before


def test_nothing_named_means_the_path_is_left_alone(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    import_modules([])
    assert sys.path == before


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("./my_kernels.py", "expects a module name, not a file path; pass --import my_kernels"),
        ("my_kernels.py", "pass --import my_kernels"),
        (
            "/abs/folder/my_kernels.py",
            "run from /abs/folder (or with PYTHONPATH=/abs/folder) and pass --import my_kernels",
        ),
        ("pkg/sub", "pass --import pkg.sub"),
        ("my-kernels", "not a module name"),
        ("", "not a module name"),
    ],
)
def test_a_path_given_to_import_gets_the_module_name_to_use(given: str, hint: str) -> None:
    with pytest.raises(UsageError, match="--import") as caught:
        check_module_name(given)
    assert hint in str(caught.value)


def test_a_module_whose_error_cannot_be_printed_still_gets_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "unprintable_for_inspector.py").write_text(
        "class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError('no words')\nraise Odd()\n"
    )
    try:
        with pytest.raises(UsageError) as caught:
            import_modules(["unprintable_for_inspector"])
        assert str(caught.value) == "--import unprintable_for_inspector: Odd: <a Odd whose message cannot be shown>"
    finally:
        sys.modules.pop("unprintable_for_inspector", None)


# Every interpreter the inspector starts (NOTE [ Child interpreters ]), started from a planted folder by a parent
# that itself runs with -P, so only the children could import the planted modules.
CHILDREN = """
from inspector.loader import FileStorageLoader
from inspector.rpc import LocalWorld
with FileStorageLoader(worker_num=1) as loader:
    assert loader.load(loader.save([1, 2])).result(60) == [1, 2]
with LocalWorld(1) as world:
    assert world.measure_rtt(count=2, warmup=1) is not None
print("children ran")
"""


@pytest.mark.slow
def test_loader_and_rpc_workers_never_import_a_stray_module_from_the_working_folder(tmp_path: Path) -> None:
    marks = plant(tmp_path)
    result = subprocess.run(
        [sys.executable, "-P", "-c", CHILDREN], capture_output=True, text=True, timeout=PROCESS_WAIT_S, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "children ran" in result.stdout
    assert sorted(p.name for p in marks.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("verb", ["lab", "app"])
def test_the_servers_never_import_a_stray_module_from_the_working_folder(tmp_path: Path, verb: str) -> None:
    from servers import free_port, serve

    folder = tmp_path / "work"
    folder.mkdir()
    marks = plant(folder)
    port = free_port()
    inspector = str(Path(sys.executable).with_name("inspector"))
    command = [inspector, verb, "--no-browser", "--port", str(port), "--import", "my_kernels"]
    if verb == "lab":
        command += ["--notebooks", str(Path(__file__).parents[1] / "notebooks")]
    home = tmp_path / "home"
    home.mkdir()
    with serve(verb, command, home, f"http://127.0.0.1:{port}/", cwd=folder):
        pass
    assert sorted(p.name for p in marks.iterdir()) == []


def test_the_kernels_import_the_users_modules_from_the_folder_the_command_ran_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspector._user_modules import IMPORT_ENV, IMPORT_PATH_ENV, import_user_modules

    (tmp_path / "kernel_probe_for_inspector.py").write_text("import sys, os\nseen = sys.path.copy()\n")
    monkeypatch.setenv(IMPORT_ENV, "kernel_probe_for_inspector")
    monkeypatch.setenv(IMPORT_PATH_ENV, str(tmp_path))
    before = list(sys.path)
    try:
        assert import_user_modules() == ()
        seen = sys.modules["kernel_probe_for_inspector"].seen
        assert str(tmp_path) in seen and seen.index(str(tmp_path)) > seen.index(os.path.dirname(os.__file__))
        assert sys.path == before  # gone again once imported
    finally:
        sys.modules.pop("kernel_probe_for_inspector", None)
