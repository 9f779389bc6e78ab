"""Docstrings as HTML: paragraphs, ``code``, bullet lists, section titles and literal blocks, all escaped.

NOTE [ Rendering docstrings ]
Backends' docstrings are written in reST or Markdown, mostly the common ground of both:
paragraphs, inline code (````code```` or ```code```), bullet lists (``-``, ``*``, ``+``),
section titles underlined with ``-`` or ``=`` (numpydoc's ``Parameters``), ``Args:``-style
headings and indented or ``::`` literal blocks. This renderer handles exactly those, with the
standard library alone, so the Backends tab does not need docutils or a Markdown package. Every
piece of the docstring's text is HTML-escaped before any markup is added: a docstring can show
``<script>`` but never run it.
"""

from __future__ import annotations

import html
import inspect
import re

_CODE = re.compile(r"``(.+?)``|`([^`]+?)`")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_UNDERLINE = re.compile(r"^\s*(-{3,}|={3,}|~{3,})\s*$")
_HEADING = re.compile(r"^([A-Z][A-Za-z ]{0,30}):$")  # Google style: "Args:", "Returns:"


def inline(text: str) -> str:
    """One line of prose: escaped, with ````code```` and ```code``` as ``<code>``."""
    parts, last = [], 0
    for match in _CODE.finditer(text):
        parts.append(html.escape(text[last : match.start()]))
        parts.append(f"<code>{html.escape(match.group(1) or match.group(2))}</code>")
        last = match.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def docstring_html(doc: str | None) -> str:
    """``doc`` as safe HTML (NOTE [ Rendering docstrings ]); an empty docstring says so."""
    text = inspect.cleandoc(doc or "")
    if not text:
        return "<p class='inspector-doc'><em>(no docstring)</em></p>"
    lines = text.splitlines()
    out: list[str] = []
    paragraph: list[str] = []
    bullets: list[str] = []
    literal: list[str] = []
    in_literal = False

    def flush() -> None:
        if paragraph:
            out.append(f"<p>{inline(' '.join(line.strip() for line in paragraph))}</p>")
            paragraph.clear()
        if bullets:
            out.append("<ul>" + "".join(f"<li>{inline(item)}</li>" for item in bullets) + "</ul>")
            bullets.clear()

    def flush_literal() -> None:
        if literal:
            block = inspect.cleandoc("\n".join(literal))
            out.append(f"<pre class='inspector-pre'>{html.escape(block)}</pre>")
            literal.clear()

    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if in_literal:
            if line.strip() == "" or line.startswith((" ", "\t")):
                literal.append(line)
                continue
            flush_literal()
            in_literal = False
        if _UNDERLINE.match(line):
            continue  # the title above it is already out
        if line.strip() and _UNDERLINE.match(following):
            flush()
            out.append(f"<h5>{inline(line.strip())}</h5>")
            continue
        if _HEADING.match(line.strip()) and not line.startswith((" ", "\t")):
            flush()
            out.append(f"<h5>{inline(line.strip()[:-1])}</h5>")
            continue
        bullet = _BULLET.match(line)
        if bullet:
            if paragraph:
                flush()
            bullets.append(bullet.group(1).strip())
            continue
        if not line.strip():
            flush()
            continue
        if bullets and line.startswith((" ", "\t")):
            bullets[-1] += " " + line.strip()  # a bullet's continuation line
            continue
        if line.startswith((" ", "\t")) and not paragraph:
            flush()
            in_literal = True
            literal.append(line)
            continue
        if line.rstrip().endswith("::"):
            paragraph.append(line.rstrip()[:-1])
            flush()
            in_literal = True
            continue
        paragraph.append(line)
    flush()
    flush_literal()
    return "<div class='inspector-doc'>" + "".join(out) + "</div>"
