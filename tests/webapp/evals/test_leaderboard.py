"""The leaderboard of a version: the best finished evaluation of each model, ranked only against evaluations with the
same settings, and only the viewer's teams' evaluations."""

from __future__ import annotations

import pytest

from tests.webapp.runs.conftest import register_builtin
from webapp.evals.models import EvalStatus
from webapp.evals.selectors import leaderboard
from webapp.evals.services import evaluation_create

pytestmark = pytest.mark.django_db


def finished(team, user, version, model: str, mean: float, **settings):
    evaluation = evaluation_create(team=team, user=user, model_name=model, versions=[version], start=False,
                                   **{"seeds": "1-8", **settings})  # fmt: skip
    evaluation.status = EvalStatus.SUCCEEDED
    interval = {"value": mean, "low": mean - 0.1, "high": mean + 0.1}
    evaluation.results = {"guess-number": {"mean_reward": interval, "success_rate": interval, "pass@1": interval}}
    evaluation.save()
    return evaluation


def test_models_are_ranked_by_their_best_result_under_the_same_settings_only(acme, alice, bob):
    version = register_builtin(acme, "guess-number")
    finished(acme, alice, version, "tiny-local", 0.2)
    best_of_base = finished(acme, bob, version, "tiny-local", 0.3)
    trained = finished(acme, alice, version, "acme/trained-agent", 0.6)
    sampled = finished(acme, alice, version, "acme/trained-agent", 0.9, greedy=False, temperature=0.7)
    boards = leaderboard(user=alice, version_id=version.pk)
    greedy = next(b for b in boards if b["settings_key"] == trained.settings_key)
    assert [(row["model"], row["evaluation"].pk) for row in greedy["rows"]] == [
        ("acme/trained-agent", trained.pk), ("tiny-local", best_of_base.pk)]  # fmt: skip
    other = next(b for b in boards if b["settings_key"] == sampled.settings_key)
    assert [row["evaluation"].pk for row in other["rows"]] == [sampled.pk], "a sampled 0.9 never outranks greedy"
    assert greedy["settings"]["greedy"] is True and other["settings"]["temperature"] == 0.7


def test_a_running_or_failed_evaluation_is_not_on_the_board(acme, alice):
    version = register_builtin(acme, "guess-number")
    finished(acme, alice, version, "tiny-local", 0.2)
    failed = finished(acme, alice, version, "big-model", 0.99)
    failed.status = EvalStatus.FAILED
    failed.save()
    (board,) = leaderboard(user=alice, version_id=version.pk)
    assert [row["model"] for row in board["rows"]] == ["tiny-local"]


def test_another_team_sees_none_of_it(acme, alice, charlie):
    version = register_builtin(acme, "guess-number")
    finished(acme, alice, version, "tiny-local", 0.2)
    assert leaderboard(user=charlie, version_id=version.pk) == []
