"""Which ``nn.Module`` made a call, by its path in the model (``model.layers.1.self_attn``).

The caller is found on the Python stack: the innermost frame whose ``self`` is a module made
the call, the outermost such frame holds the model, and the path is the module's name in the
model's ``named_modules()``. The whole stack is walked once per model: a module of a model
already found is named from that model's names. After that a call costs the few frames up to
its module and a dictionary lookup (reading a frame's locals costs about a microsecond, tens
of them across a deep stack), so a watch looks callers up only for the calls it keeps in full
and the first call of each kind, never on every call.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from types import FrameType
from typing import Any

from torch import nn

_MAX_FRAMES = 200


def _module_of(frame: FrameType) -> nn.Module | None:
    code = frame.f_code
    if not code.co_argcount or code.co_varnames[0] != "self":
        return None
    owner = frame.f_locals.get("self")
    return owner if isinstance(owner, nn.Module) else None


class ModulePaths:
    """Finds the calling module's path; one per watch, so its caches end with the block."""

    def __init__(self) -> None:
        self._names: dict[int, tuple[nn.Module, dict[int, str]]] = {}  # id(model) -> (model, id(module) -> name)
        self._known: dict[int, tuple[nn.Module, str]] = {}  # id(calling module) -> (module, its path)

    def caller(self, frame: FrameType | None = None) -> str:
        """The path of the innermost module on the stack above ``frame`` (``""`` when none is)."""
        frame = frame if frame is not None else sys._getframe(1)
        inner = None
        depth = 0
        while frame is not None and depth < _MAX_FRAMES:  # ``_module_of``, inlined: kept calls run this
            code = frame.f_code
            if code.co_argcount and code.co_varnames[0] == "self":
                owner = frame.f_locals.get("self")
                if isinstance(owner, nn.Module):
                    inner = owner
                    break
            frame, depth = frame.f_back, depth + 1
        if inner is None or frame is None:
            return ""
        known = self._known.get(id(inner))
        if known is not None and known[0] is inner:
            return known[1]
        for _model, names in self._names.values():  # a module of a model a walk found already: no walk
            name = names.get(id(inner))
            if name:
                self._known[id(inner)] = (inner, name)
                return name
        outer = inner
        frame = frame.f_back
        while frame is not None and depth < _MAX_FRAMES:
            module = _module_of(frame)
            if module is not None:
                outer = module
            frame, depth = frame.f_back, depth + 1
        path = self.path(inner, outer)
        self._known[id(inner)] = (inner, path)
        return path

    def path(self, module: nn.Module, model: nn.Module) -> str:
        """``module``'s name inside ``model``; the model itself is named by its class."""
        entry = self._names.get(id(model))
        if entry is None or entry[0] is not model:
            entry = (model, {id(m): name for name, m in model.named_modules(remove_duplicate=False)})
            self._names[id(model)] = entry
        name = entry[1].get(id(module))
        if name is None:  # a module outside the model's tree (called from inside it)
            return type(module).__name__
        return name or type(module).__name__


_NUMBER = re.compile(r"\.(\d+)\.")


def summarise(paths: Iterable[str], most: int = 3) -> str:
    """Every path in full (``model.layers.1.self_attn``) when there are at most ``most``; past
    that, ``model.layers.{0..31}.self_attn`` for paths that differ only in one index, else a short list."""
    unique = sorted(set(p for p in paths if p), key=_natural)
    if len(unique) <= most:
        return ", ".join(unique)
    patterns: dict[str, list[int]] = {}
    others: list[str] = []
    for path in unique:
        match = _NUMBER.search(path)
        if match is None:
            others.append(path)
            continue
        pattern = path[: match.start()] + ".{}." + path[match.end() :]
        patterns.setdefault(pattern, []).append(int(match.group(1)))
    parts = []
    for pattern, numbers in patterns.items():
        numbers.sort()
        if len(numbers) == 1:
            parts.append(pattern.replace("{}", str(numbers[0])))
        elif numbers == list(range(numbers[0], numbers[-1] + 1)):
            parts.append(pattern.replace("{}", f"{{{numbers[0]}..{numbers[-1]}}}"))
        else:
            parts.append(pattern.replace("{}", "{" + ",".join(str(n) for n in numbers) + "}"))
    parts += others
    more = len(parts) - most
    return ", ".join(parts[:most]) + (f" (+{more} more)" if more > 0 else "")


def _natural(text: str) -> list[Any]:
    return [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", text)]
