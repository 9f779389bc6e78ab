"""The job-wide comparisons and the ``JobView`` over ranks' records: who ran another backend, the straggler, the
environment keys that differ; how a view shows itself, and its file."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.rpc import JobView, JobViewError
from inspector.rpc._job_compare import STRAGGLER_RATIO, signature_of, signature_text
from tests.rpc.job_records_made import by_kind, environment, group, loader, sdpa


def three_ranks() -> JobView:
    return JobView(
        3,
        {
            0: by_kind(environment(), sdpa(), loader(wait_s=0.001)),
            1: by_kind(environment(host="node1"), sdpa(group("math")), loader(wait_s=0.002)),
            2: by_kind(environment(host="node2", INSPECTOR_OPS="profile=reference"), sdpa(), loader(0.09, wait_s=0.08)),
        },
        how="test",
    )


def test_the_rank_that_ran_another_backend_for_the_same_signature_is_named() -> None:
    view = three_ranks()
    (difference,) = view.sdpa.differences
    assert (difference.usual, difference.usual_ranks, difference.odd) == (
        ("flash_attention",),
        (0, 2),
        ((1, ("math",)),),
    )
    assert view.sdpa.odd_ranks == (1,)
    frame = view.sdpa.to_frame()
    assert frame.loc[frame["differs"], "rank"].tolist() == [1]


def test_the_enable_flags_and_gpu_are_not_part_of_a_signature_but_are_shown_as_the_reason() -> None:
    steered = group("math", enabled="math", capability="sm75")
    view = JobView(3, {0: by_kind(sdpa(group())), 1: by_kind(sdpa(steered)), 2: by_kind(sdpa(group()))})
    assert view.sdpa.odd_ranks == (1,)
    assert view.sdpa.findings() == [
        "rank 1 ran math (enabled math on sm75, against enabled flash, math) where ranks [0, 2] ran "
        "flash_attention, for float32 q(N, 4, L, 32) k(N, 4, S, 32) v(N, 4, S, 32) cpu causal"
    ]


def test_lengths_and_batch_are_not_part_of_a_signature_and_what_picks_a_backend_is() -> None:
    ranged = group(shapes="q(3, 4, 1..64, 32) k(3, 4, 17..80, 32) v(3, 4, 17..80, 32)")
    view = JobView(2, {0: by_kind(sdpa(group())), 1: by_kind(sdpa(ranged))})
    (signature,) = view.sdpa.signatures
    assert signature.calls == ((0, 5), (1, 5)) and signature.odd == ()
    for change in (
        {"shapes": "q(2, 4, 64, 16) k(2, 4, 64, 16) v(2, 4, 64, 16)"},  # another head dim
        {"shapes": "q(2, 8, 64, 32) k(2, 2, 64, 32) v(2, 2, 64, 32)"},  # grouped-query heads
        {"dtype": "float16"},
        {"causal": False},
        {"dropout_p": 0.1},
        {"grad": True},
        {"mask": "(2, 1, 64, 64) bool"},
        {"device": "cuda"},
    ):
        other = JobView(2, {0: by_kind(sdpa(group())), 1: by_kind(sdpa(group("math", **change)))})
        assert other.sdpa.differences == () and len(other.sdpa.signatures) == 2, change
    masks = JobView(2, {0: by_kind(sdpa(group(mask="(2, 1, 64, 64) bool"))), 1: by_kind(sdpa(group(mask="4-D bool")))})
    assert len(masks.sdpa.signatures) == 1


def test_the_odd_rank_is_named_against_the_majority_whichever_rank_it_is() -> None:
    view = JobView(3, {0: by_kind(sdpa(group("math"))), 1: by_kind(sdpa(group())), 2: by_kind(sdpa(group()))})
    (difference,) = view.sdpa.differences
    assert (difference.usual, difference.usual_ranks, difference.odd) == (
        ("flash_attention",),
        (1, 2),
        ((0, ("math",)),),
    )
    assert view.sdpa.findings()[0].startswith("rank 0 ran math where ranks [1, 2] ran flash_attention, for ")


def test_with_no_majority_the_ranks_disagree_and_each_is_listed() -> None:
    three_way = JobView(
        3,
        {
            0: by_kind(sdpa(group("math"))),
            1: by_kind(sdpa(group())),
            2: by_kind(sdpa(group(count=3), group("math", count=1))),
        },
    )
    (difference,) = three_way.sdpa.differences
    assert difference.disagree and difference.usual == () and difference.usual_ranks == ()
    assert difference.odd == ((0, ("math",)), (1, ("flash_attention",)), (2, ("flash_attention", "math")))
    assert three_way.sdpa.odd_ranks == (0, 1, 2)
    assert three_way.sdpa.findings()[0] == (
        "the ranks disagree, with no majority, for float32 q(N, 4, L, 32) k(N, 4, S, 32) v(N, 4, S, 32) cpu causal: "
        "rank 0 ran math; rank 1 ran flash_attention; rank 2 ran flash_attention/math"
    )
    two = JobView(2, {0: by_kind(sdpa(group())), 1: by_kind(sdpa(group("math", enabled="math")))})
    assert two.sdpa.findings()[0].endswith(
        ": rank 0 ran flash_attention (enabled flash, math); rank 1 ran math (enabled math)"
    )
    half = JobView(
        4,
        {
            0: by_kind(sdpa(group())),
            1: by_kind(sdpa(group())),
            2: by_kind(sdpa(group("math"))),
            3: by_kind(sdpa(group("efficient_attention"))),
        },
    )
    assert half.sdpa.differences[0].disagree  # two of four is not a majority
    assert "<td>(no majority)</td>" in half.sdpa._repr_html_()


def test_a_version_1_record_without_devices_is_still_read_and_compared() -> None:
    old = sdpa(group())
    old["version"] = 1
    for g in old["groups"]:
        del g["device"], g["capability"]
    view = JobView(2, {0: by_kind(old), 1: by_kind(old)})
    assert view.sdpa.signatures[0].signature.endswith("v(N, 4, S, 32) causal")
    assert view.sdpa.to_frame()["device"].tolist() == ["", ""]
    assert JobView.from_dict(view.to_dict()) == view and view.sdpa.findings() == []
    mixed = JobView(3, {0: by_kind(old), 1: by_kind(sdpa()), 2: by_kind(sdpa())})
    assert mixed.sdpa.findings() == [
        "the ranks sent SDPA records of different versions (1 from rank 0, 2 from "
        "ranks [1, 2]), so some calls may not be compared: run one inspector version "
        "on every rank"
    ]


def test_native_fast_paths_compare_by_module() -> None:
    native = group("native fast path", shapes="", dtype="", causal=None, dropout_p=None, module="encoder.layers.0")
    view = JobView(2, {0: by_kind(sdpa(native)), 1: by_kind(sdpa(group()))})
    assert [s.signature for s in view.sdpa.signatures] == [
        "native fast path in encoder.layers.0",
        "float32 q(N, 4, L, 32) k(N, 4, S, 32) v(N, 4, S, 32) cpu causal",
    ]


def test_the_straggler_is_the_rank_that_waits_longest_for_data_with_its_ratio() -> None:
    loader_view = three_ranks().loader
    assert loader_view.spread.metric == "wait_s_median"
    assert (loader_view.straggler, loader_view.slowest, loader_view.fastest) == (2, 2, 0)
    assert loader_view.ratio == pytest.approx(80.0)
    assert loader_view.findings() == [
        "rank 2 is the straggler: its median wait for data per step is 80 ms, 80.0x rank 0's (1 ms)"
    ]
    assert loader_view.to_frame()["role"].tolist() == ["fastest", "", "straggler"]


def test_without_a_step_on_every_rank_the_time_per_batch_ranks_the_loaders() -> None:
    view = JobView(2, {0: by_kind(loader(0.010, wait_s=None)), 1: by_kind(loader(0.011, wait_s=0.001))})
    spread = view.loader.spread
    assert spread.metric == "batch_s_median" and spread.slowest == 1
    assert spread.ratio < STRAGGLER_RATIO and view.loader.straggler is None
    assert view.loader.findings()[0].startswith("the loaders agree: median time per batch from 10 ms (rank 0)")


def test_one_loader_or_a_free_one_has_no_spread_or_an_infinite_ratio() -> None:
    assert JobView(1, {0: by_kind(loader())}).loader.spread is None
    free = JobView(2, {0: by_kind(loader(wait_s=0.0)), 1: by_kind(loader(wait_s=0.5))}).loader
    assert free.ratio == math.inf and free.straggler == 1 and "∞" in free.findings()[0]


def test_environment_keys_that_differ_are_listed_with_their_ranks_and_identity_keys_are_not() -> None:
    view = three_ranks()
    (difference,) = view.environment.differences
    assert difference.key == "INSPECTOR_OPS"
    assert difference.values == (("None", (0, 1)), ("'profile=reference'", (2,)))
    reported = {"environment": {**environment(), "values": {"torch": "2.12"}}}
    missing = JobView(2, {0: by_kind(environment()), 1: reported})
    keys = {d.key: d.values for d in missing.environment.differences}
    assert keys["torch"] == (("'2.13.0'", (0,)), ("'2.12'", (1,)))
    assert keys["GPU"] == (("None", (0,)), ("(not reported)", (1,)))
    assert "host" not in keys and "pid" not in keys


def test_the_view_shows_its_findings_in_its_repr_html_and_frame() -> None:
    view = three_ranks()
    text = repr(view)
    assert text.splitlines()[0] == "<JobView: 3 of 3 rank(s), test"
    assert "rank 1 ran math where ranks [0, 2] ran flash_attention" in text and "rank 2 is the straggler" in text
    assert "INSPECTOR_OPS differs: None on ranks [0, 1], 'profile=reference' on rank 2" in text
    markup = view._repr_html_()
    assert markup.count("<table") == 3 and "⚠ INSPECTOR_OPS" in markup
    frame = view.to_frame()
    assert frame["environment differs on"].tolist() == ["", "", "INSPECTOR_OPS"]
    assert frame["sdpa backends"].tolist() == ["flash_attention x5", "math x5", "flash_attention x5"]
    assert view.environment.to_frame().attrs["differing"] == ["INSPECTOR_OPS"]
    for part in (view.sdpa, view.loader, view.environment):
        assert repr(part).startswith("<Job") and "<table" in part._repr_html_()


def test_user_text_in_records_is_escaped_in_html() -> None:
    view = JobView(1, {0: by_kind(environment(INSPECTOR_OPS="<script>x</script>"), sdpa(group(module="<b>m</b>")))})
    markup = view._repr_html_()
    assert "<script>" not in markup and "&lt;script&gt;" in markup


def test_refused_ranks_are_named_first_and_left_out_of_every_comparison() -> None:
    view = JobView(3, {0: by_kind(environment()), 1: by_kind(environment())}, {2: "payload: is not JSON"})
    assert view.findings()[0] == "rank 2's records were refused: payload: is not JSON"
    assert view.ranks == (0, 1) and view.sdpa is None and view.loader is None


def test_a_view_saved_to_a_file_loads_back_equal(tmp_path) -> None:
    view = three_ranks()
    path = view.save(tmp_path / "job.json")
    assert JobView.load(path) == view and JobView.from_dict(view.to_dict()) == view


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(format="inspector.plan"),
        lambda d: d.update(version=2),
        lambda d: d.update(world_size=0),
        lambda d: d["ranks"].append(d["ranks"][0]),  # a rank twice
        lambda d: d["ranks"][0].update(rank=7),  # not below the world size
        lambda d: d["ranks"][0]["records"].append(d["ranks"][0]["records"][0]),  # a kind twice
        lambda d: d["ranks"][0]["records"][0].update(kind="pickle"),
        lambda d: d["refused"].append({"rank": 0, "why": "listed as read too"}),
        lambda d: d.update(extra=True),
    ],
)
def test_a_view_file_that_was_altered_is_refused_saying_why(change) -> None:
    data = three_ranks().to_dict()
    change(data)
    with pytest.raises(JobViewError, match=r"^Not a job view: view"):
        JobView.from_dict(data)


def test_files_that_are_not_views_are_refused_without_blocking(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, why in ((fifo, "it is a FIFO"), (tmp_path, "it is a directory")):
        with pytest.raises(JobViewError, match=rf"Cannot read .*: {why}, not a job view"):
            JobView.load(path)
    for text, why in (
        ('{"a": NaN}', "NaN"),
        ("[" * 100_000, "not JSON"),
        ('{"a": 1, "a": 2}', "a key twice"),
        ("\xff", "not JSON"),
    ):
        (tmp_path / "bad.json").write_bytes(text.encode("latin-1"))
        with pytest.raises(JobViewError, match=why):
            JobView.load(tmp_path / "bad.json")


RANK_RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "environment": st.builds(
            lambda ops, torch: environment(INSPECTOR_OPS=ops, torch=torch),
            st.none() | st.text(max_size=10),
            st.sampled_from(["2.12.0", "2.13.0"]),
        ),
        "torch_sdpa.watch": st.builds(
            lambda backends: sdpa(*(group(b, count=n) for b, n in backends)),
            st.lists(
                st.tuples(st.sampled_from(["math", "flash_attention"]), st.integers(0, 10**6)), min_size=1, max_size=3
            ),
        ),
        "loader.profile": st.builds(loader, st.floats(1e-6, 10), st.none() | st.floats(0, 10)),
    },
)


@settings(max_examples=100, deadline=None)
@given(st.lists(RANK_RECORDS, min_size=1, max_size=5))
def test_any_view_round_trips_through_json_and_shows_itself(ranks) -> None:
    view = JobView(len(ranks), dict(enumerate(ranks)), how="made")
    assert JobView.from_json(view.to_json()) == view
    repr(view), view._repr_html_(), view.to_frame()
    for part in (view.sdpa, view.loader, view.environment):
        if part is not None:
            part.to_frame()


DIMS = st.lists(st.integers(1, 4096), min_size=2, max_size=5)


@settings(max_examples=200, deadline=None)
@given(DIMS, st.integers(1, 64), st.integers(1, 8192), st.integers(1, 8192), st.integers(1, 8192))
def test_a_signature_ignores_the_batch_and_lengths_and_keeps_every_other_size(dims, batch, q_len, kv_len, top) -> None:
    def shapes(batch: int, q_len: object, kv_len: object) -> str:
        def one(length: object) -> str:
            sizes = [str(d) for d in dims]
            if len(sizes) >= 3:
                sizes[0] = str(batch)
            sizes[-2] = str(length)
            return ", ".join(sizes)

        return f"q({one(q_len)}) k({one(kv_len)}) v({one(kv_len)})"

    plain = signature_of(group(shapes=shapes(batch, q_len, kv_len)))
    ranged = signature_of(group(shapes=shapes(batch + 1, f"{min(q_len, top)}..{max(q_len, top)}", kv_len)))
    assert plain == ranged
    wider = [d + 1 for d in dims]
    other = signature_of(group(shapes=shapes(batch, q_len, kv_len).replace(f"{dims[-1]})", f"{wider[-1]})")))
    assert other != plain  # another head dim is another call


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_any_shapes_or_mask_text_a_rank_sends_makes_a_signature_and_its_text(shapes, mask) -> None:
    signature = signature_of(group(shapes=shapes, mask=mask))
    assert isinstance(signature_text(signature), str)
    view = JobView(2, {0: by_kind(sdpa(group(shapes=shapes, mask=mask))), 1: by_kind(sdpa(group("math")))})
    repr(view.sdpa), view.sdpa._repr_html_(), view.sdpa.findings()
