"""Writing metric points and their rollups. On PostgreSQL a batch is COPYed into a staging table and folded into
the points and the rollups by the server in three statements; elsewhere (SQLite) through the ORM."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, transaction

from webapp.runs.models import MetricPoint
from webapp.runs.rollups import WIDTHS, rollups_add

Point = tuple[str, int, float, float]  # name, step, value, wall_time

STAGING = """
CREATE TEMP TABLE IF NOT EXISTS trainyard_metric_staging (
    run_id bigint, name varchar(100), step integer, value double precision, wall_time double precision
) ON COMMIT DELETE ROWS
"""
MERGE_POINTS = """
INSERT INTO runs_metricpoint (run_id, name, step, value, wall_time)
SELECT DISTINCT ON (run_id, name, step) run_id, name, step, value, wall_time FROM trainyard_metric_staging
ORDER BY run_id, name, step, wall_time DESC
ON CONFLICT (run_id, name, step) DO UPDATE SET value = excluded.value, wall_time = excluded.wall_time
"""
MERGE_ROLLUPS = """
INSERT INTO runs_metricrollup (run_id, name, width, bucket, min_step, min_value, max_step, max_value, count)
SELECT run_id, name, w, step / w,
       (array_agg(step ORDER BY value ASC, step))[1], min(value),
       (array_agg(step ORDER BY value DESC, step))[1], max(value), count(*)
FROM trainyard_metric_staging CROSS JOIN unnest(%s::int[]) AS w
GROUP BY run_id, name, w, step / w
ON CONFLICT (run_id, name, width, bucket) DO UPDATE SET
  min_step = CASE WHEN excluded.min_value < runs_metricrollup.min_value THEN excluded.min_step
                  ELSE runs_metricrollup.min_step END,
  min_value = LEAST(excluded.min_value, runs_metricrollup.min_value),
  max_step = CASE WHEN excluded.max_value > runs_metricrollup.max_value THEN excluded.max_step
                  ELSE runs_metricrollup.max_step END,
  max_value = GREATEST(excluded.max_value, runs_metricrollup.max_value),
  count = runs_metricrollup.count + excluded.count
"""


def points_write(run_id: int, points: Sequence[Point]) -> int:
    """Insert (or, for a step logged again after a resume, update) points, and fold them into the rollups."""
    if not points:
        return 0
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(STAGING)
                with cursor.cursor.copy(
                    "COPY trainyard_metric_staging (run_id, name, step, value, wall_time) FROM STDIN"
                ) as copy:
                    for name, step, value, wall in points:
                        copy.write_row((run_id, name, step, value, wall))
                cursor.execute(MERGE_POINTS)
                cursor.execute(MERGE_ROLLUPS, [list(WIDTHS)])
                cursor.execute("TRUNCATE trainyard_metric_staging")
        else:
            MetricPoint.objects.bulk_create(
                [MetricPoint(run_id=run_id, name=n, step=s, value=v, wall_time=w) for n, s, v, w in points],
                update_conflicts=True,
                unique_fields=["run", "name", "step"],
                update_fields=["value", "wall_time"],
                batch_size=2000,
            )
            rollups_add(run_id, ((n, s, v) for n, s, v, _ in points))
    return len(points)
