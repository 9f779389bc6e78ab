"""The notebooks teach: every section ends with an exercise and its hidden solution, and the glossary
defines every term the notebooks rely on, linked from the tour before the first of them is used."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
GLOSSARY = ROOT / "notebooks" / "glossary.md"
# The words a learner meets before any notebook defines them; each must have a glossary entry.
REQUIRED_TERMS = ("row", "spec", "faithful", "origin", "chain", "profile", "verb", "device map")
GLOSSARY_LINK = re.compile(r"\]\(glossary\.md(#[\w-]+)?\)")


def _sections(nb: nbformat.NotebookNode) -> list[tuple[str, list[nbformat.NotebookNode]]]:
    """The notebook's ``## `` sections, each with its cells (its heading cell first)."""
    sections: list[tuple[str, list[nbformat.NotebookNode]]] = []
    for cell in nb.cells:
        first_line = cell.source.lstrip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "markdown" and first_line.startswith("## "):
            sections.append((first_line[3:].strip(), [cell]))
        elif sections:
            sections[-1][1].append(cell)
    return sections


def glossary_entries(text: str) -> dict[str, str]:
    """``### term`` headings of the glossary, each with the text under it."""
    entries: dict[str, str] = {}
    term = None
    for line in text.splitlines():
        if line.startswith("### "):
            term = line[4:].strip().lower()
            entries[term] = ""
        elif term is not None:
            entries[term] += line + "\n"
    return {term: body.strip() for term, body in entries.items()}


def _term_pattern(term: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(term)}s?\b", re.IGNORECASE)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_section_ends_with_an_exercise_and_its_hidden_solution(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    sections = _sections(nb)
    assert len(sections) >= 2, f"{path.name}: expected ## sections"
    for title, cells in sections:
        *_, exercise, answer = cells
        where = f"{path.name}, section {title!r}"
        assert exercise.cell_type == "markdown" and exercise.source.startswith("**Exercise.**"), (
            f"{where}: the second-to-last cell must be a markdown cell starting with '**Exercise.**'"
        )
        assert answer.cell_type == "code", f"{where}: the last cell must be the solution's code cell"
        assert answer.source.splitlines()[0] == "# Solution", f"{where}: the solution starts with '# Solution'"
        assert answer.metadata.get("jupyter", {}).get("source_hidden") is True, f"{where}: hide the solution"
        assert "solution" in answer.metadata.get("tags", []), f"{where}: tag the solution 'solution'"
        assert len(answer.source.splitlines()) > 1, f"{where}: the solution has code after its comment"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_only_solutions_are_hidden(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    hidden = [i for i, cell in enumerate(nb.cells) if cell.metadata.get("jupyter", {}).get("source_hidden")]
    tagged = [i for i, cell in enumerate(nb.cells) if "solution" in cell.metadata.get("tags", [])]
    assert hidden == tagged


def test_the_glossary_defines_every_required_term() -> None:
    entries = glossary_entries(GLOSSARY.read_text(encoding="utf-8"))
    missing = [term for term in REQUIRED_TERMS if term not in entries]
    assert missing == [], f"glossary.md lacks entries for {missing}"
    empty = [term for term, body in entries.items() if len(body.split()) < 8]
    assert empty == [], f"glossary.md entries without a real definition: {empty}"
    assert list(entries) == sorted(entries), "keep the glossary in alphabetical order"


def test_every_glossary_term_is_used_by_a_notebook() -> None:
    text = "\n".join(cell.source for path in NOTEBOOKS for cell in nbformat.read(path, as_version=4).cells)
    words = {"strict and soft selection": "strict"}
    unused = [
        t
        for t in glossary_entries(GLOSSARY.read_text(encoding="utf-8"))
        if not _term_pattern(words.get(t, t)).search(text)
    ]
    assert unused == [], f"glossary terms no notebook uses: {unused}"


def test_the_tour_links_the_glossary_before_any_term_is_used() -> None:
    tour = nbformat.read(ROOT / "notebooks" / "00_tour.ipynb", as_version=4)
    prose = [cell.source for cell in tour.cells if cell.cell_type == "markdown"]
    linked = next((i for i, text in enumerate(prose) if GLOSSARY_LINK.search(text)), None)
    assert linked is not None, "the tour must link notebooks/glossary.md"
    link_at = GLOSSARY_LINK.search(prose[linked])
    assert link_at is not None
    for term in REQUIRED_TERMS:
        first = next(((i, m.start()) for i, text in enumerate(prose) if (m := _term_pattern(term).search(text))), None)
        assert first is not None, f"the tour never uses {term!r}: drop it from REQUIRED_TERMS or teach it"
        assert first > (linked, link_at.start()), f"the tour uses {term!r} before it links the glossary"


def test_the_readme_links_the_glossary() -> None:
    assert "(notebooks/glossary.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_backends_notebook_lists_every_demo_backend() -> None:
    from inspector.backends import BackendRegistry
    from inspector.examples.data_backends import install

    demos = install(BackendRegistry(discover_plugins=False)).snapshot()
    names = {info.name for info in demos.backends} | {failure.name for failure in demos.import_errors}
    nb = nbformat.read(ROOT / "notebooks" / "02_data_backends.ipynb", as_version=4)
    (_, cells), *_ = _sections(nb)
    listed = set(re.findall(r"^- `(\w+)`", cells[0].source, re.MULTILINE))
    assert len(names) == 4 and listed == names, f"section 1 lists {sorted(listed)}; the demos are {sorted(names)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_links_the_glossary_in_its_introduction(path: Path) -> None:
    intro = nbformat.read(path, as_version=4).cells[0]
    assert intro.cell_type == "markdown" and GLOSSARY_LINK.search(intro.source), f"{path.name}: link glossary.md"


def test_the_loader_chart_is_read_from_the_learners_own_numbers() -> None:
    nb = nbformat.read(ROOT / "notebooks" / "03_loader_profiling.ipynb", as_version=4)
    (at,) = [i for i, cell in enumerate(nb.cells) if cell.source.startswith("**Reading the chart.**")]
    reading = nb.cells[at + 1]
    assert reading.cell_type == "code" and "interpretation" in reading.metadata.get("tags", [])
    assert "read_the_chart(rows)" in reading.source  # the rows measured a few cells above, in this run
