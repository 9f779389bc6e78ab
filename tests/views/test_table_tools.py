"""Every table: headers never broken inside a word, empty columns hidden, headers explained, CSV to take away."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pandas as pd
import pytest

from inspector.views._tables import COLUMN_TIPS, TABLE_CSS, styled, table_html


def csv_of(markup: str) -> pd.DataFrame:
    (encoded,) = re.findall(r"href='data:text/csv;charset=utf-8;base64,([^']+)'", markup)
    return pd.read_csv(io.StringIO(base64.b64decode(encoded).decode("utf-8")))


def headers(markup: str) -> list[tuple[str, str | None]]:
    """(text, title) of every header cell."""
    found = re.findall(r"<th\b([^>]*)>([^<]*)</th>", markup)
    return [(text.strip(), (re.findall(r'title="([^"]*)"', attrs) or [None])[0]) for attrs, text in found]


def test_headers_wrap_only_between_words_and_the_table_lays_out_by_its_content() -> None:
    rules = TABLE_CSS.replace(" ", "")
    assert "anywhere" not in rules and "break-all" not in rules
    assert ".inspector-tabletable{border-collapse:collapse;table-layout:auto}" in rules  # JupyterLab's is fixed
    assert "word-break:normal" in rules and "overflow-wrap:normal" in rules


def test_a_column_empty_in_every_row_is_not_shown_and_a_table_without_rows_keeps_its_headers() -> None:
    frame = pd.DataFrame(
        {"method": ["ours", "sync"], "mb_s": [900.0, 400.0], "h2d_ms": [None, np.nan], "note": ["", ""]}
    )
    markup = table_html(frame)
    assert [text for text, _ in headers(markup)] == ["method", "mb_s"]
    assert list(csv_of(markup).columns) == ["method", "mb_s"]
    assert [text for text, _ in headers(table_html(styled(frame)))] == ["method", "mb_s"]
    empty = frame.iloc[0:0]
    assert [text for text, _ in headers(table_html(empty))] == ["method", "mb_s", "h2d_ms", "note"]


def test_headers_that_do_not_explain_themselves_carry_a_tooltip() -> None:
    frame = pd.DataFrame({"layout": ["steps"], "share_of_memcpy": [0.4], "x_sync": [1.2], "mine": [1]})
    frame.attrs["column_tips"] = {"mine": "a column the view explains itself"}
    shown = dict(headers(table_html(frame)))
    assert shown["share_of_memcpy"] == COLUMN_TIPS["share_of_memcpy"] and "synchronous" in shown["x_sync"]
    assert shown["mine"] == "a column the view explains itself" and shown["layout"] is None
    assert dict(headers(table_html(styled(frame))))["x_sync"] == COLUMN_TIPS["x_sync"]


def test_every_table_downloads_and_copies_as_csv_with_full_precision() -> None:
    frame = pd.DataFrame({"row": ['a, quoted "one"', "ü"], "value": [1 / 3, 2.0]})
    markup = table_html(frame, "Ratios to each baseline")
    assert "download='ratios_to_each_baseline.csv'" in markup and "inspectorTables.copy(this)" in markup
    back = csv_of(markup)
    assert back["row"].tolist() == frame["row"].tolist() and back["value"].tolist() == pytest.approx([1 / 3, 2.0])
    assert "0.333" in markup and "0.3333333" not in markup  # the cells still show meaningful digits
    one_row = table_html(frame.head(1))
    assert "inspector-table-csv" in one_row and "inspector-table-filter" not in one_row


def test_a_styled_tables_headers_line_up_with_their_cells() -> None:
    frame = pd.DataFrame({"row": ["sdpa", "math"], "priority": [10, 5], "failing": ["", "dtype: required ..."]})
    markup = table_html(styled(frame).set_properties(subset=["failing"], **{"text-align": "left"}))
    rules = dict(re.findall(r"#T_\w+ \.(col\d) \{\s*text-align: (\w+);", markup))
    assert rules == {"col0": "left", "col1": "right", "col2": "left"}  # .colN matches the header and its cells
    assert 'class="col_heading level0 col2"' in markup


def test_an_index_name_sits_in_the_header_row_not_in_a_row_of_its_own() -> None:
    frame = pd.DataFrame({"build": ["supported"], "stats": ["missing"]}, index=pd.Index(["npz"], name="backend"))
    markup = table_html(styled(frame, index=True))
    head = markup[markup.index("<thead>") : markup.index("</thead>")]
    assert head.count("<tr>") == 1 and ">backend</th>" in head
    assert csv_of(markup).columns.tolist() == ["backend", "build", "stats"]


def test_a_cell_a_spreadsheet_would_run_as_a_formula_downloads_as_text() -> None:
    frame = pd.DataFrame(
        {"backend": ['=HYPERLINK("http://x","y")', "@SUM(A1)", "plain", "-2+3"], "ms": [-1.5, 2.0, 3.0, 4.0]}
    )
    back = csv_of(table_html(frame))
    assert back["backend"].tolist() == ['\'=HYPERLINK("http://x","y")', "'@SUM(A1)", "plain", "'-2+3"]
    assert back["ms"].tolist() == [-1.5, 2.0, 3.0, 4.0]  # numbers stay numbers, negative ones too
    styled_index = pd.DataFrame({"ms": [1.0]}, index=pd.Index(["+cmd"], name="backend")).style
    assert csv_of(table_html(styled_index))["backend"].tolist() == ["'+cmd"]
