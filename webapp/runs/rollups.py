"""MetricRollup upkeep and the downsampled read of a series (min/max buckets, at most ~2,000 points)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from webapp.runs.downsample import minmax_downsample
from webapp.runs.models import MetricPoint, MetricRollup

WIDTHS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)
MAX_POINTS = 2000
RAW_LIMIT = 4000  # ranges with fewer steps than this are read raw and downsampled exactly

UPSERT = """
INSERT INTO runs_metricrollup (run_id, name, width, bucket, min_step, min_value, max_step, max_value, count)
VALUES {rows}
ON CONFLICT (run_id, name, width, bucket) DO UPDATE SET
  min_step = CASE WHEN excluded.min_value < runs_metricrollup.min_value THEN excluded.min_step
                  ELSE runs_metricrollup.min_step END,
  min_value = CASE WHEN excluded.min_value < runs_metricrollup.min_value THEN excluded.min_value
                   ELSE runs_metricrollup.min_value END,
  max_step = CASE WHEN excluded.max_value > runs_metricrollup.max_value THEN excluded.max_step
                  ELSE runs_metricrollup.max_step END,
  max_value = CASE WHEN excluded.max_value > runs_metricrollup.max_value THEN excluded.max_value
                   ELSE runs_metricrollup.max_value END,
  count = runs_metricrollup.count + excluded.count
"""


def rollups_add(run_id: int, points: Iterable[tuple[str, int, float]]) -> None:
    """Fold new points into every width's buckets: one statement, pre-aggregated per bucket (PostgreSQL refuses
    to update one row twice in a statement)."""
    folded: dict[tuple[str, int, int], list] = {}
    for name, step, value in points:
        for width in WIDTHS:
            key = (name, width, step // width)
            row = folded.get(key)
            if row is None:
                folded[key] = [step, value, step, value, 1]
                continue
            if value < row[1]:
                row[0], row[1] = step, value
            if value > row[3]:
                row[2], row[3] = step, value
            row[4] += 1
    if not folded:
        return
    items = list(folded.items())
    with connection.cursor() as cursor:
        for start in range(0, len(items), 2000):
            chunk = items[start : start + 2000]
            params: list = []
            for (name, width, bucket), (min_step, min_value, max_step, max_value, count) in chunk:
                params += [run_id, name, width, bucket, min_step, min_value, max_step, max_value, count]
            rows = ",".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(chunk))
            cursor.execute(UPSERT.format(rows=rows), params)


def rollups_rebuild(run_id: int, name: str, chunk: int = 50_000) -> None:
    """Recompute a series' rollups from its raw points (after a bulk import)."""
    MetricRollup.objects.filter(run_id=run_id, name=name).delete()
    last = -1
    while True:
        rows = list(
            MetricPoint.objects.filter(run_id=run_id, name=name, step__gt=last)
            .order_by("step")
            .values_list("step", "value")[:chunk]
        )
        if not rows:
            return
        rollups_add(run_id, ((name, step, value) for step, value in rows))
        last = rows[-1][0]


def _raw(run_id: int, name: str, lo: int, hi: int) -> tuple[list[int], list[float], list[float]]:
    rows = MetricPoint.objects.filter(run_id=run_id, name=name, step__gte=lo, step__lte=hi).order_by("step")
    steps, values, walls = [], [], []
    for step, value, wall in rows.values_list("step", "value", "wall_time"):
        steps.append(step)
        values.append(value)
        walls.append(wall)
    return steps, values, walls


def series_bounds(run_id: int, name: str) -> tuple[int, int] | None:
    points = MetricPoint.objects.filter(run_id=run_id, name=name)
    first = points.order_by("step").values_list("step", flat=True).first()
    if first is None:
        return None
    return first, points.order_by("-step").values_list("step", flat=True).first()


def series_downsampled(
    run_id: int, name: str, lo: int | None = None, hi: int | None = None, max_points: int = MAX_POINTS
) -> dict[str, list]:
    """{"step": [...], "value": [...], "wall_time": [...]} for steps in [lo, hi], at most ~max_points points."""
    bounds = series_bounds(run_id, name)
    if bounds is None:
        return {"step": [], "value": [], "wall_time": []}
    lo = bounds[0] if lo is None else max(lo, bounds[0])
    hi = bounds[1] if hi is None else min(hi, bounds[1])
    if hi < lo:
        return {"step": [], "value": [], "wall_time": []}
    if hi - lo + 1 <= RAW_LIMIT:
        steps, values, walls = _raw(run_id, name, lo, hi)
        keep_steps, keep_values = minmax_downsample(steps, values, max_points)
        wall_by_step = dict(zip(steps, walls, strict=True))
        return {"step": keep_steps, "value": keep_values, "wall_time": [wall_by_step[s] for s in keep_steps]}
    buckets_wanted = max(1, (max_points - 2) // 2)
    width = next((w for w in WIDTHS if (hi - lo + 1) / w <= buckets_wanted), WIDTHS[-1])
    first_full, last_full = -(-lo // width), (hi + 1) // width - 1  # buckets wholly inside [lo, hi]
    points: dict[int, float] = {}
    for row in MetricRollup.objects.filter(
        run_id=run_id, name=name, width=width, bucket__gte=first_full, bucket__lte=last_full
    ).values_list("min_step", "min_value", "max_step", "max_value"):
        points[row[0]] = row[1]
        points[row[2]] = row[3]
    # The partial buckets at both ends are read raw (fewer than `width` points each) and downsampled the same way.
    edges = [(lo, first_full * width - 1), ((last_full + 1) * width, hi)] if first_full <= last_full else [(lo, hi)]
    for edge_lo, edge_hi in edges:
        if edge_hi >= edge_lo:
            steps, values, _ = _raw(run_id, name, edge_lo, edge_hi)
            for s, v in zip(*minmax_downsample(steps, values, 4), strict=True):
                points[s] = v
    for s, v, _ in zip(*_raw(run_id, name, lo, lo), strict=True):
        points[s] = v
    for s, v, _ in zip(*_raw(run_id, name, hi, hi), strict=True):
        points[s] = v
    ordered = sorted(points)
    walls = dict(
        MetricPoint.objects.filter(run_id=run_id, name=name, step__in=ordered).values_list("step", "wall_time")
    )
    return {"step": ordered, "value": [points[s] for s in ordered], "wall_time": [walls.get(s) for s in ordered]}
