"""Code, tests and docs speak of the project alone: never of where a requirement came from."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("inspector", "tests", "docs", "notebooks", "benchmarks", "binder", "README.md", "CONTRIBUTING.md")
SUFFIXES = {".py", ".md", ".ipynb", ".txt", ".toml", ".yml", ".yaml", ".cfg"}
# Built from parts so that this file does not match itself.
ORIGINS = re.compile(
    "|".join(
        (
            r"\bthe " + "seed\\b",
            r"\bseed " + "design",
            r"\bTensor" + "Play\\b",
            r"\bDI-" + "engine\\b",
            r"\boriginal " + "design\\b",
            r"\breview" + "er\\b",
            r"\bfor the " + "lead\\b",
            r"\bissue ?#?\d+",
            r"\bAX-" + r"\d+",
        )
    ),
    re.IGNORECASE,
)


def _files() -> list[Path]:
    found = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(
                p
                for p in path.rglob("*")
                if p.is_file() and p.suffix in SUFFIXES and ".ipynb_checkpoints" not in p.parts
            )
    return found


def test_no_file_names_where_its_requirements_came_from() -> None:
    files = _files()
    assert len(files) > 100
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if ORIGINS.search(line)
    ]
    assert hits == []
