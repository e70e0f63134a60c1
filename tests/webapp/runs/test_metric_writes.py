"""Points and rollups written in batches agree with the raw series, on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import random

from webapp.runs.metric_writes import points_write
from webapp.runs.models import MetricPoint, MetricRollup
from webapp.runs.rollups import WIDTHS
from webapp.runs.services import run_create


def test_rollups_hold_every_buckets_true_extremes(acme, alice, guess_version):
    run = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    rng = random.Random(5)
    values = {step: rng.uniform(-1, 1) for step in range(1, 3001)}
    steps = list(values)
    for start in range(0, len(steps), 700):  # batches that split buckets between them
        points_write(run.pk, [("loss", s, values[s], float(s)) for s in steps[start : start + 700]])
    assert MetricPoint.objects.filter(run=run, name="loss").count() == 3000
    for width in (WIDTHS[0], WIDTHS[3]):
        for rollup in MetricRollup.objects.filter(run=run, name="loss", width=width):
            inside = [values[s] for s in steps if s // width == rollup.bucket]
            assert rollup.count == len(inside)
            assert rollup.min_value == min(inside) and values[rollup.min_step] == rollup.min_value
            assert rollup.max_value == max(inside) and values[rollup.max_step] == rollup.max_value


def test_a_step_logged_again_keeps_the_newer_value(acme, alice, guess_version):
    run = run_create(team=acme, user=alice, env_version=guess_version, start=False)
    points_write(run.pk, [("reward", 1, 0.1, 1.0)])
    points_write(run.pk, [("reward", 1, 0.9, 2.0)])
    assert list(MetricPoint.objects.filter(run=run).values_list("value", flat=True)) == [0.9]
