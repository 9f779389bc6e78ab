"""What every verb of the command line shares: the parser, the usage error, output paths, progress, JSON."""

from __future__ import annotations

import argparse
import dataclasses
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn


class UsageError(Exception):
    """Bad usage of a verb: ``main`` prints it as one line on stderr and exits 2."""


def one_line(exc: BaseException) -> str:
    """An error's message on one line: its lines joined with ``; `` (multi-fact messages keep their facts)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
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
