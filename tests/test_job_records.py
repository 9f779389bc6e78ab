"""Job records: what a watch and a loader profile send to rank 0, and the check every record gets on receipt."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector._job_records import (
    LOADER,
    MAX_SDPA_GROUPS,
    MAX_TEXT,
    SDPA,
    RecordProblem,
    check_record,
    clip,
    finite,
)
from inspector.dispatch import op_backend, torch_sdpa
from inspector.loader import profile_loader


@pytest.fixture(scope="module")
def watched() -> torch_sdpa.WatchedCalls:
    q = torch.randn(2, 4, 16, 8)
    with torch_sdpa.watch() as calls:
        for _ in range(3):
            F.scaled_dot_product_attention(q, q, q, is_causal=True)
        with op_backend(torch_sdpa="math"):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.0)
    return calls


def test_a_watch_becomes_a_plain_record_of_its_groups_with_counts(watched) -> None:
    record = watched.job_record()
    assert (record["kind"], record["version"], record["seen"]) == (SDPA, 2, 4)
    assert json.loads(json.dumps(record)) == record  # plain data
    first, second = record["groups"]
    assert (first["backend"], first["count"], first["causal"]) == ("flash_attention", 3, True)
    assert first["dtype"] == "float32"
    assert first["shapes"] == "q(2, 4, 16, 8) k(2, 4, 16, 8) v(2, 4, 16, 8)"
    assert (first["device"], first["capability"]) == ("cpu", "")  # the capability is CUDA's only
    assert (second["backend"], second["count"], second["causal"]) == ("math", 1, False)
    assert (record["folded_groups"], record["folded_calls"]) == (0, 0)
    assert check_record(record) == record


def test_a_watch_of_many_kinds_of_call_sends_the_most_called_groups_and_counts_the_rest() -> None:
    kinds = MAX_SDPA_GROUPS + 6
    with torch_sdpa.watch() as calls:
        for batch in range(1, kinds + 1):  # each batch size is a group of its own
            q = torch.randn(batch, 1, 2, 4)
            for _ in range(2 if batch <= MAX_SDPA_GROUPS else 1):
                F.scaled_dot_product_attention(q, q, q)
    record = calls.job_record()
    assert len(record["groups"]) == MAX_SDPA_GROUPS and all(g["count"] == 2 for g in record["groups"])
    assert (record["folded_groups"], record["folded_calls"], record["seen"]) == (6, 6, 2 * MAX_SDPA_GROUPS + 6)


def test_a_loader_profile_becomes_its_headline_figures_and_verdict() -> None:
    profile = profile_loader([torch.ones(4)] * 20, step=lambda batch: batch.sum(), batches=8, warmup=1)
    record = profile.job_record()
    assert (record["kind"], record["version"], record["batches"]) == (LOADER, 1, 8)
    assert record["verdict"] == profile.verdict and record["label"] == "list"
    assert record["data_wait_share"] == pytest.approx(profile.data_wait_share.value)
    assert record["batch_s_min"] <= record["batch_s_median"] <= record["batch_s_max"]
    assert record["wait_s_median"] is not None and check_record(record) == record


def test_a_profile_without_a_step_has_no_wait_and_no_verdict() -> None:
    record = profile_loader([torch.ones(4)] * 10, batches=4, warmup=0).job_record()
    assert (record["wait_s_median"], record["verdict"], record["data_wait_share"]) == (None, None, None)


def test_clip_and_finite_keep_records_inside_their_bounds() -> None:
    assert clip("x" * 500) == "x" * (MAX_TEXT - 1) + "…" and len(clip("x" * 500)) == MAX_TEXT
    assert clip(None) == "" and clip("short") == "short"
    assert [finite(v) for v in (1, 0.5, math.nan, math.inf, -1.0, True, None, "3")] == [1.0, 0.5] + [None] * 6


def _valid_sdpa(watched) -> dict:
    return watched.job_record()


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: r.update(kind="torch_sdpa.spy"), "record.kind"),
        (lambda r: r.update(version=3), "record.version"),
        (lambda r: r.update(version=1), "record.groups[0]"),  # version 1 groups have no device fields
        (lambda r: r.update(version=True), "record.version"),
        (lambda r: r.update(seen=True), "record.seen"),
        (lambda r: r.update(seen=-1), "record.seen"),
        (lambda r: r.update(seen=2**70), "record.seen"),
        (lambda r: r.update(extra=1), "record"),
        (lambda r: r.pop("groups"), "record"),
        (lambda r: r["groups"][0].update(backend="x" * (MAX_TEXT + 1)), "record.groups[0].backend"),
        (lambda r: r["groups"][0].update(dropout_p=math.nan), "record.groups[0].dropout_p"),
        (lambda r: r["groups"][0].update(causal="yes"), "record.groups[0].causal"),
        (lambda r: r["groups"][0].update(count=1.5), "record.groups[0].count"),
        (lambda r: r.update(groups=r["groups"] * (MAX_SDPA_GROUPS // 2 + 1)), "record.groups"),
        (lambda r: r.update(groups={"a": 1}), "record.groups"),
    ],
)
def test_a_record_that_does_not_fit_is_refused_with_the_path_of_the_field(watched, change, path) -> None:
    record = copy.deepcopy(_valid_sdpa(watched))
    change(record)
    with pytest.raises(RecordProblem) as caught:
        check_record(record)
    assert caught.value.path == path, caught.value


def test_an_environment_record_refuses_odd_keys_and_values() -> None:
    good = {"kind": "environment", "version": 1, "values": {"torch": "2.13.0", "GPUs": 0, "flag": True, "cuda": None}}
    assert check_record(good) == good
    for values in (
        {"bad\nkey": 1},
        {"k": [1]},
        {"k": math.inf},
        {f"k{i}": 1 for i in range(49)},
        {"k": "v" * 201},
        {"k": 2**63},
        [],
    ):
        with pytest.raises(RecordProblem):
            check_record({**good, "values": values})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_json_value_is_either_a_record_or_a_record_problem(value) -> None:
    try:
        checked = check_record(value)
    except RecordProblem:
        return
    assert check_record(checked) == checked


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["backend", "count", "dtype", "shapes", "causal", "dropout_p", "mask", "grad", "module"]), JSON)
def test_a_group_with_any_field_replaced_is_checked_or_refused_never_crashes(watched, field, value) -> None:
    record = copy.deepcopy(_valid_sdpa(watched))
    record["groups"][0][field] = value
    try:
        check_record(record)
    except RecordProblem as exc:
        assert exc.path.startswith("record.groups[0].")
