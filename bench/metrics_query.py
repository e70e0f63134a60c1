"""A 1,000,000-point series in PostgreSQL, returned min/max-downsampled (goal <= 50 ms and <= 2,000 points).

Baseline, measured in the same run: reading the raw series (what a page without rollups would have to fetch).
"""

from __future__ import annotations

import json
import statistics
import time

from pg_setup import make_run, setup, teardown
from smoke import SMOKE, smoke_marked

POINTS = 20_000 if SMOKE else 1_000_000


def main() -> None:
    setup()
    try:
        from django.db import connection

        from webapp.runs.models import MetricPoint
        from webapp.runs.rollups import rollups_rebuild, series_downsampled

        run = make_run()
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO runs_metricpoint (run_id, name, step, value, wall_time) "
                "SELECT %s, 'reward', s, sin(s / 5000.0) + (random() - 0.5) * 0.2, 1.7e9 + s "
                "FROM generate_series(1, %s) AS s",
                [run.pk, POINTS],
            )
            cursor.execute("ANALYZE runs_metricpoint")
        rollups_rebuild(run.pk, "reward")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE runs_metricrollup")
        print(f"loaded {POINTS} points and their rollups in {time.perf_counter() - started:.1f} s")

        timings, size = [], 0
        for _ in range(3 if SMOKE else 25):
            t = time.perf_counter()
            series = series_downsampled(run.pk, "reward")
            timings.append(time.perf_counter() - t)
            size = len(series["step"])
        zoom = []
        for i in range(2 if SMOKE else 10):
            lo = POINTS // 30 * (i + 1)
            t = time.perf_counter()
            series_downsampled(run.pk, "reward", lo, lo + POINTS // 4)
            zoom.append(time.perf_counter() - t)
        t = time.perf_counter()
        raw = list(MetricPoint.objects.filter(run=run, name="reward").order_by("step").values_list("step", "value"))
        baseline = time.perf_counter() - t
        median = statistics.median(timings)
        print(f"downsampled full range: median {median * 1e3:.1f} ms, {size} points; "
              f"zoomed 250k range: median {statistics.median(zoom) * 1e3:.1f} ms")  # fmt: skip
        print(f"raw read of {len(raw)} points: {baseline * 1e3:.0f} ms ({baseline / median:.0f}x slower)")
        print(
            json.dumps(
                smoke_marked(
                    {
                        "metric": "metrics_query_1m_points_ms",
                        "value": round(median * 1e3, 2),
                        "unit": "ms",
                        "goal": "<= 50 ms and <= 2000 points",
                        "points": size,
                        "baseline": {"raw_read_ms": round(baseline * 1e3, 1)},
                        "speedup_vs_raw": round(baseline / median, 1),
                    }
                )
            )
        )
    finally:
        teardown()


if __name__ == "__main__":
    main()
