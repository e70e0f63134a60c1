"""The compare page and its data: readable runs only (others refused, never dropped), diffs, summaries, CSV."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from tests.webapp.runs.conftest import register_builtin
from webapp.runs.models import Episode, MetricPoint
from webapp.runs.rollups import rollups_add
from webapp.runs.services import run_create
from workers.training.recording import row_key


def add_points(run, name, values, start=1):
    points = [MetricPoint(run=run, name=name, step=start + i, value=v, wall_time=1000.0 + i) for i, v in
              enumerate(values)]  # fmt: skip
    MetricPoint.objects.bulk_create(points)
    rollups_add(run.pk, ((p.name, p.step, p.value) for p in points))


@pytest.fixture
def two_runs(acme, alice):
    version = register_builtin(acme, "guess-number")
    a = run_create(team=acme, user=alice, env_version=version, start=False, config={"learning_rate": 1e-4})
    b = run_create(team=acme, user=alice, env_version=version, start=False, config={"learning_rate": 3e-4})
    add_points(a, "reward", [0.1, 0.2, 0.6])
    add_points(b, "reward", [0.0, 0.4, 0.3])
    for run, reward in ((a, 1.0), (b, 0.25)):
        Episode.objects.create(run=run, step=3, group=0, index_in_group=0, prompt="Play", reward=reward,
                               reset_kwargs={"seed": 7}, row_key=row_key("Play", {"seed": 7}),
                               turns=[{"role": "assistant", "content": "", "tool_calls": [
                                   {"name": "guess", "arguments": {"number": 8}}]}])  # fmt: skip
    return a, b


def url(name, *runs, **params):
    query = "&".join([f"runs={','.join(str(r.pk) for r in runs)}", *(f"{k}={v}" for k, v in params.items())])
    return reverse(name) + "?" + query


def test_compare_shows_only_differences_and_a_summary(client_for, alice, two_runs):
    a, b = two_runs
    response = client_for(alice).get(url("runs:compare", a, b))
    assert response.status_code == 200
    diff_keys = [d["key"] for d in response.context["diff"]]
    assert diff_keys == ["grpo.learning_rate"]
    summary = {row["name"]: row for row in response.context["summary"]}
    assert summary[a.name]["final_reward"] == 0.6 and summary[a.name]["best_reward"] == 0.6
    assert summary[b.name]["final_reward"] == 0.3 and summary[b.name]["best_reward"] == 0.4
    (row,) = response.context["rows"]
    assert row["seed"] == 7 and [e.reward for e in row["episodes"]] == [1.0, 0.25]


def test_another_teams_run_is_refused_not_dropped(client_for, alice, charlie, two_runs, globex):
    a, _ = two_runs
    for name in ["runs:compare", "runs:compare-metrics", "runs:compare-summary-csv", "runs:compare-metrics-csv"]:
        response = client_for(charlie).get(url(name, a))
        assert response.status_code == 404
    # alice asking for a run she cannot read alongside hers gets a refusal naming it
    version = register_builtin(globex, "guess-number")
    theirs = run_create(team=globex, user=charlie, env_version=version, start=False)
    response = client_for(alice).get(url("runs:compare-metrics", a, theirs))
    assert response.status_code == 404


def test_checkbox_style_urls_work_too(client_for, alice, two_runs):
    a, b = two_runs
    response = client_for(alice).get(reverse("runs:compare") + f"?runs={a.pk}&runs={b.pk}")
    assert [r.pk for r in response.context["runs"]] == [a.pk, b.pk]


def test_csv_exports(client_for, alice, two_runs):
    a, b = two_runs
    c = client_for(alice)
    summary = list(csv.DictReader(io.StringIO(c.get(url("runs:compare-summary-csv", a, b)).content.decode())))
    assert [row["name"] for row in summary] == [a.name, b.name]
    body = b"".join(c.get(url("runs:compare-metrics-csv", a, b, names="reward")).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == 6 and rows[0]["metric"] == "reward"


def test_long_series_come_back_downsampled_with_their_extremes(client_for, alice, two_runs):
    a, _ = two_runs
    values = [((i * 7919) % 1000) / 1000 for i in range(20_000)]
    values[12_345] = 50.0
    values[17_000] = -50.0
    add_points(a, "loss", values, start=10)
    body = client_for(alice).get(url("runs:compare-metrics", a, names="loss")).json()
    series = body["runs"][str(a.pk)]["loss"]
    assert len(series["step"]) <= 2002
    assert 50.0 in series["value"] and -50.0 in series["value"]
    assert series["step"][0] == 10 and series["step"][-1] == 10 + 19_999
    zoomed = client_for(alice).get(url("runs:compare-metrics", a, names="loss", lo=12_000, hi=12_600)).json()
    assert len(zoomed["runs"][str(a.pk)]["loss"]["step"]) == 601  # a small range comes back whole
