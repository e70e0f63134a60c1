"""Downsampling never loses a bucket's extremes, nor the first and last point."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.runs.downsample import bucket_edges, bucket_index, minmax_indices

values = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9)


@st.composite
def series(draw):
    ys = draw(st.lists(values, min_size=1, max_size=3000))
    gaps = draw(st.lists(st.integers(min_value=1, max_value=50), min_size=len(ys), max_size=len(ys)))
    xs, x = [], draw(st.integers(min_value=0, max_value=1000))
    for gap in gaps:
        xs.append(x)
        x += gap
    return xs, ys


@settings(max_examples=200, deadline=None)
@given(series(), st.integers(min_value=4, max_value=400))
def test_every_buckets_min_and_max_and_both_ends_are_kept(data, max_points):
    xs, ys = data
    keep = minmax_indices(xs, ys, max_points)
    assert len(keep) <= max(max_points, len(xs) if len(xs) <= max_points else 0)
    assert keep == sorted(set(keep))
    assert keep[0] == 0 and keep[-1] == len(xs) - 1
    if len(xs) <= max_points:
        assert keep == list(range(len(xs)))
        return
    buckets = max(1, (max_points - 2) // 2)
    lo, width = bucket_edges(xs[0], xs[-1], buckets)
    kept_by_bucket: dict[int, list[float]] = {}
    all_by_bucket: dict[int, list[float]] = {}
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        b = bucket_index(x, lo, width, buckets)
        all_by_bucket.setdefault(b, []).append(y)
        if i in set(keep):
            kept_by_bucket.setdefault(b, []).append(y)
    for b, ys_in_bucket in all_by_bucket.items():
        assert min(ys_in_bucket) in kept_by_bucket[b]
        assert max(ys_in_bucket) in kept_by_bucket[b]


def test_a_spike_survives_that_random_sampling_would_lose():
    xs = list(range(100_000))
    ys = [0.0] * 100_000
    ys[54_321] = 99.0
    keep = minmax_indices(xs, ys, 2000)
    assert len(keep) <= 2000
    assert 54_321 in keep
