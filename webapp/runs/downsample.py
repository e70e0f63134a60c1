"""Min/max downsampling: the extremes of every bucket survive (random sampling would lose spikes), and so do
the first and the last point. Used on raw points for small ranges; MetricRollup holds the same buckets
precomputed at ingest for large ones."""

from __future__ import annotations

from collections.abc import Sequence


def bucket_edges(lo: float, hi: float, buckets: int) -> tuple[float, float]:
    width = (hi - lo) / buckets if hi > lo else 1.0
    return lo, width


def bucket_index(x: float, lo: float, width: float, buckets: int) -> int:
    return min(buckets - 1, max(0, int((x - lo) / width)))


def minmax_indices(xs: Sequence[float], ys: Sequence[float], max_points: int = 2000) -> list[int]:
    """Indices to keep of a series ordered by x: per equal-width x bucket, its min and its max (first occurrence),
    plus the first and the last point; at most `max_points` indices, in x order."""
    n = len(xs)
    if n <= max_points:
        return list(range(n))
    buckets = max(1, (max_points - 2) // 2)
    lo, width = bucket_edges(xs[0], xs[-1], buckets)
    best_min: dict[int, int] = {}
    best_max: dict[int, int] = {}
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        b = bucket_index(x, lo, width, buckets)
        if b not in best_min or y < ys[best_min[b]]:
            best_min[b] = i
        if b not in best_max or y > ys[best_max[b]]:
            best_max[b] = i
    keep = {0, n - 1, *best_min.values(), *best_max.values()}
    return sorted(keep)


def minmax_downsample(xs: Sequence[float], ys: Sequence[float], max_points: int = 2000):
    keep = minmax_indices(xs, ys, max_points)
    return [xs[i] for i in keep], [ys[i] for i in keep]
