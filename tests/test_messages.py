"""The message builder: error text built from a headline, facts and a next step, kept as data."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector._messages import Message, explanation_of
from inspector.errors import InspectorError
from inspector.panels._guard import error_html

line = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=30).filter(
    lambda text: text.strip() == text and "=" not in text
)


def test_the_text_is_headline_facts_notes_then_the_next_step() -> None:
    message = Message(
        "Worker 1 died.",
        {"worker": 1, "file": "a.pkl", "pid": None, "flags": ()},
        next_step="load again",
        notes=["the pool replaced it", ""],
    )
    assert str(message) == "Worker 1 died.\nworker = 1\nfile = a.pkl\nthe pool replaced it\nnext step = load again"
    assert message.facts == (("worker", "1"), ("file", "a.pkl")) and message.fact("file") == "a.pkl"
    assert str(Message("Only a headline.")) == "Only a headline."
    assert str(Message("h", [("failed rank", 3), ("empty", "")])) == "h\nfailed rank = 3"
    with pytest.raises(KeyError, match=r"Facts: \['worker', 'file'\]"):
        message.fact("missing")


def test_a_fact_whose_value_refuses_comparison_is_kept() -> None:
    assert Message("h", {"shape": np.arange(2)}).fact("shape") == "[0 1]"


@given(headline=line, facts=st.lists(st.tuples(line, line), max_size=5), step=st.one_of(st.just(""), line))
def test_the_pieces_are_read_back_without_parsing(headline: str, facts: list[tuple[str, str]], step: str) -> None:
    message = Message(headline, facts, next_step=step)
    lines = str(message).split("\n")
    assert lines[0] == headline and message.headline == headline and message.next_step == step
    assert lines[1 : 1 + len(facts)] == [f"{k} = {v}" for k, v in facts]
    assert (lines[-1] == f"next step = {step}") == bool(step) and len(lines) == 1 + len(facts) + bool(step)


class _Failure(InspectorError, OSError):
    pass


def test_an_error_built_from_a_message_keeps_it_and_reads_as_its_text() -> None:
    message = Message("The file is gone.", {"path": "/tmp/x"}, next_step="save it again")
    error = _Failure(message)
    assert str(error) == str(message) and error.args == (str(message),)
    assert explanation_of(error) is message and error.explanation is message
    assert isinstance(error, OSError) and error.errno is None
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(message) and explanation_of(copy) == message
    plain = InspectorError("plain text")
    assert explanation_of(plain) is None and explanation_of(ValueError("x")) is None


def test_the_panels_show_an_explained_error_from_its_pieces() -> None:
    shown = error_html(_Failure(Message("The file <b> is gone.", {"path": "/tmp/x"}, next_step="save it again")))
    assert "<b>_Failure</b>: The file &lt;b&gt; is gone." in shown
    assert "path = /tmp/x\nnext step = save it again</pre>" in shown
