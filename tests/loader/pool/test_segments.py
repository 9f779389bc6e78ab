"""Segment sizing and the pool's recycling through leases."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.loader.pool.segments import SegmentPool
from inspector.loader.pool.shared_segment import MIN_CAPACITY, capacity_for


@given(st.integers(min_value=0, max_value=1 << 40))
def test_capacity_fits_with_at_most_an_eighth_to_spare(nbytes: int) -> None:
    capacity = capacity_for(nbytes)
    assert capacity >= max(nbytes, MIN_CAPACITY) and capacity % 4096 == 0
    if nbytes > MIN_CAPACITY:
        assert capacity <= nbytes * 1.125 + 4096


def test_a_lease_keeps_a_segment_from_reuse_until_its_arrays_die() -> None:
    pool = SegmentPool("inspector-loader-test", max_free=4)
    try:
        first = pool.acquire(1000, worker=0)
        base = pool.lease(first, 1000)
        leaf = base[10:20]
        del base
        second = pool.acquire(1000, worker=0)
        assert second is not first and pool.counts().leased == 1
        pool.release(second)
        del leaf
        gc.collect()
        third = pool.acquire(1000, worker=0)
        assert third in (first, second) and pool.counts().busy == 1
    finally:
        pool.close()


def test_segments_already_mapped_by_the_worker_are_preferred() -> None:
    pool = SegmentPool("inspector-loader-test", max_free=4)
    try:
        a, b = pool.acquire(1000, worker=0), pool.acquire(1000, worker=1)
        pool.mark_mapped(b, 1)
        pool.release(a)
        pool.release(b)
        assert pool.acquire(1000, worker=1) is b
    finally:
        pool.close()


def test_excess_free_segments_are_dropped_and_their_workers_told() -> None:
    pool = SegmentPool("inspector-loader-test", max_free=1)
    try:
        segments = [pool.acquire(1000, worker=0) for _ in range(3)]
        for seg in segments:
            pool.mark_mapped(seg, 5)
            pool.release(seg)
        assert pool.counts().free == 1
        assert sorted(pool.take_unmaps()) == sorted((5, s.id) for s in segments[:2]) or len(pool.take_unmaps()) == 0
    finally:
        pool.close()


def test_a_payload_far_smaller_than_a_free_segment_gets_its_own() -> None:
    pool = SegmentPool("inspector-loader-test", max_free=4)
    try:
        big = pool.acquire(64 << 20, worker=0)
        pool.release(big)
        small = pool.acquire(1000, worker=0)
        assert small is not big and small.capacity == MIN_CAPACITY
    finally:
        pool.close()


@pytest.mark.parametrize("nbytes", [0, 1, MIN_CAPACITY + 1])
def test_segments_are_at_least_the_minimum(nbytes: int) -> None:
    assert capacity_for(nbytes) >= MIN_CAPACITY
