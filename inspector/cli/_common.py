"""What every verb of the command line shares: the parser, the usage error, output paths, progress, JSON."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import os
import secrets
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from inspector._user_modules import folder_importable


class UsageError(Exception):
    """Bad usage of a verb: ``main`` prints it as one line on stderr and exits 2."""


def one_line(exc: BaseException) -> str:
    """An error's message on one line: its lines joined with ``; `` (multi-fact messages keep their facts)."""
    lines = [line.strip() for line in safe_text(exc).splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad invocation is one line on stderr, naming ``--help``, and exit 2.

    Sub-commands inherit this class (``add_subparsers`` uses the parent's class), so every verb
    answers the same way; see NOTE [ One line for bad usage ] in ``inspector.cli``.
    """

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        self.exit(2, f"{self.prog}: {text}; see {self.prog} --help\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """Like argparse, but an unrecognised argument is blamed on the verb it was given to."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._innermost(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _innermost(self, parsed: argparse.Namespace) -> ArgumentParser:
        """The (sub-)parser of the deepest verb chosen in ``parsed``."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, ArgumentParser):
                    return chosen._innermost(parsed)
        return self


def check_output_path(text: str, what: str, example: str) -> Path:
    """The file path ``text`` if a file can be written there, else a :class:`UsageError` saying why.

    Checked before any work starts: a directory, a device or FIFO, a folder that does not
    exist (folders are never created) or one that refuses new files are all refused.
    ``example`` is a file name to suggest, e.g. ``report.html``.
    """
    if not text:
        raise UsageError(f"{what} is empty; give a file path such as {example}")
    path = Path(text)
    if path.is_dir() or text.endswith(("/", os.sep)):
        raise UsageError(f"{what} {text} is a folder; give a file path such as {path / example}")
    parent = path.absolute().parent
    if not parent.exists():
        raise UsageError(f"{what}: the folder {parent} does not exist; create it first (folders are not created)")
    if not parent.is_dir():
        raise UsageError(f"{what}: {parent} is not a folder")
    if path.exists() and not path.is_file():
        raise UsageError(f"{what} {text} exists and is not a regular file (a device, FIFO or socket); give a file path")
    probe = parent / f".inspector-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise UsageError(
            f"{what}: cannot create files in {parent} ({exc.strerror or exc}); choose a folder you can write to"
        ) from None
    os.close(fd)
    os.unlink(probe)
    return path


def progress_bar(done: int, total: int, message: str) -> None:
    """A one-line progress bar on stderr, for the long verbs."""
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message[:60]:<60}{end}")
    sys.stderr.flush()


def jsonable(value: Any) -> Any:
    """Dataclasses, tuples and mappings as plain JSON values; anything else as its short text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    from inspector.dispatch.context import format_value

    return format_value(value)


def add_import_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module first (your own families and backends); a module name such as "
        "my_kernels, found in the current folder or on PYTHONPATH; repeatable",
    )


def safe_text(exc: BaseException) -> str:
    """``str(exc)``, or a placeholder when the exception's own ``__str__`` fails (user code can do anything)."""
    try:
        return str(exc)
    except Exception:
        return f"<a {type(exc).__name__} whose message cannot be shown>"


def check_module_name(name: str) -> str:
    """``name`` if it reads as a dotted module name; a :class:`UsageError` suggesting one for a file path."""
    if name.endswith(".py") or "/" in name or os.sep in name:
        path = Path(name)
        folder = path.parent if str(path.parent) not in ("", ".") else None
        if not name.endswith(".py") and folder is not None and not path.is_absolute():
            where = f"pass --import {'.'.join(path.parts)} (a package's module, dotted)"
        elif folder is not None:
            where = f"run from {folder} (or with PYTHONPATH={folder}) and pass --import {path.name.removesuffix('.py')}"
        else:
            where = f"pass --import {path.name.removesuffix('.py')}"
        raise UsageError(f"--import {name}: expects a module name, not a file path; {where}")
    if not all(part.isidentifier() for part in name.split(".")):
        raise UsageError(f"--import {name!r}: not a module name; give a dotted name such as my_kernels or pkg.kernels")
    return name


@contextlib.contextmanager
def working_directory_importable() -> Iterator[None]:
    """The current folder on ``sys.path`` for the block only, after the standard library.

    ``--import my_kernels`` finds ``./my_kernels.py`` as ``python -m`` would, but a ``csv.py``
    or ``html.py`` in the folder never shadows the standard library, and once the user's
    modules are imported the folder is gone from the path, so the inspector's own later
    imports cannot pick a stray file up from it.
    """
    with folder_importable(os.getcwd()):
        yield


def import_modules(modules: Sequence[str]) -> None:
    """Import the user's modules (``--import``) so their families and backends are registered."""
    if not modules:
        return
    for name in modules:
        check_module_name(name)
    with working_directory_importable():
        for name in modules:
            try:
                importlib.import_module(name)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # a module that exits or fails at import is bad input here
                raise UsageError(f"--import {name}: {type(exc).__name__}: {safe_text(exc)}") from None
