"""Property tests for the two text formats users type: INSPECTOR_OPS and extra axes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.dispatch import parse_selections
from inspector.dispatch.context import parse_extra

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)
VALUES = st.one_of(
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda f: not f.is_integer()),
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_parse_selections_never_raises_and_keeps_only_well_formed_entries(raw: str) -> None:
    entries, problems = parse_selections(raw)
    for key, value in entries.items():
        assert key and value and key == key.strip() and value == value.strip()
        assert "," not in key + value and "=" not in key
    assert all(p.startswith("INSPECTOR_OPS: ") for p in problems)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, st.from_regex(r"[A-Za-z0-9_.\-]{1,12}", fullmatch=True), max_size=6))
def test_parse_selections_round_trips_what_it_is_given(selection: dict[str, str]) -> None:
    raw = " , ".join(f"{k} = {v}" for k, v in selection.items())
    assert parse_selections(raw) == (selection, ())


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=6))
def test_parse_extra_round_trips_numbers_booleans_and_none(extra: dict[str, object]) -> None:
    text = ", ".join(f"{k}={v}" for k, v in extra.items())
    assert parse_extra(text) == extra


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_parse_extra_either_parses_or_says_how_to_write_it(text: str) -> None:
    try:
        parsed = parse_extra(text)
    except ValueError as exc:
        assert "name=value" in str(exc)
    else:
        assert all(key.isidentifier() for key in parsed)


def test_parse_extra_keeps_other_words_as_strings() -> None:
    assert parse_extra("layout=bhsd, kv_len=16, causal=TRUE") == {"layout": "bhsd", "kv_len": 16, "causal": True}
    with pytest.raises(ValueError, match="name=value"):
        parse_extra("kv_len")
