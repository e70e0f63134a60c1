"""The evaluation pages: alice's team sees its evaluations, their comparison and leaderboard; charlie's sees none."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.evals.test_leaderboard import finished
from tests.webapp.runs.conftest import register_builtin
from webapp.evals.models import EvalEpisode, EvalStatus, Evaluation
from webapp.evals.selectors import comparison

pytestmark = pytest.mark.django_db


def played(evaluation, rewards: dict[int, float]) -> None:
    for seed, reward in rewards.items():
        EvalEpisode.objects.create(evaluation=evaluation, environment="guess-number", version_id=evaluation.versions[0][
            "version"], seed=seed, row_key=f"row-{seed}", prompt="p", reward=reward, success=reward > 0,
            turns=[{"role": "assistant", "content": f"guess for {seed}", "tool_calls": []}])  # fmt: skip


@pytest.fixture
def two_evals(acme, alice):
    version = register_builtin(acme, "guess-number")
    base = finished(acme, alice, version, "tiny-local", 0.25)
    trained = finished(acme, alice, version, "acme/trained", 0.5)
    played(base, {1: 0.0, 2: 1.0, 3: 0.0, 4: 0.0})
    played(trained, {1: 1.0, 2: 1.0, 3: 0.0, 4: 0.0})
    return version, base, trained


def test_alice_sees_an_evaluation_its_results_and_its_episodes(client_for, alice, two_evals):
    _, base, trained = two_evals
    listing = client_for(alice).get(reverse("evals:eval-list"))
    assert listing.status_code == 200
    assert f'data-evaluation="{trained.pk}"'.encode() in listing.content and b"0.500" in listing.content
    page = client_for(alice).get(reverse("evals:eval-detail", args=[base.pk]))
    assert page.status_code == 200
    assert b"0.250" in page.content and b"guess-number" in page.content
    episode = base.episodes.get(seed=2)
    transcript = client_for(alice).get(reverse("evals:eval-episode", args=[base.pk, episode.pk]))
    assert b"guess for 2" in transcript.content
    summary = client_for(alice).get(reverse("evals:eval-summary", args=[base.pk])).json()
    assert summary["model"] == "tiny-local" and summary["results"]["guess-number"]["mean_reward"]["value"] == 0.25


def test_the_comparison_puts_the_episodes_that_differ_first(client_for, alice, two_evals):
    _, base, trained = two_evals
    result = comparison([base, trained])
    assert result["differing"] == 1
    assert result["rows"][0]["seed"] == 1 and [c["mean"] for c in result["rows"][0]["cells"]] == [0.0, 1.0]
    page = client_for(alice).get(reverse("evals:eval-compare") + f"?ids={base.pk},{trained.pk}")
    assert page.status_code == 200 and b"1 of 4 differ" in page.content


def test_the_leaderboard_page_ranks_the_trained_model_first(client_for, alice, two_evals):
    version, _, _ = two_evals
    page = client_for(alice).get(reverse("evals:leaderboard", args=[version.pk]))
    content = page.content.decode()
    assert content.index("acme/trained") < content.index("tiny-local</code>")


def test_charlie_sees_none_of_it(client_for, charlie, two_evals):
    _, base, trained = two_evals
    client = client_for(charlie)
    assert client.get(reverse("evals:eval-detail", args=[base.pk])).status_code == 404
    assert client.get(reverse("evals:eval-summary", args=[base.pk])).status_code == 404
    assert client.get(reverse("evals:eval-compare") + f"?ids={base.pk},{trained.pk}").status_code == 400
    assert b"data-evaluation=" not in client.get(reverse("evals:eval-list")).content
    assert client.post(reverse("evals:eval-cancel", args=[base.pk])).status_code == 404


def test_the_form_names_the_field_it_refuses_and_saves_nothing(client_for, alice, acme):
    version = register_builtin(acme, "guess-number")
    page = client_for(alice).post(reverse("evals:eval-create"), {
        "model_name": "tiny-local", "versions": [str(version.pk)], "episodes": 10, "seed_start": 0,
        "seeds": "5-banana", "k": 1, "temperature": 1, "top_p": 1, "max_turns": 4, "max_tokens": 64})  # fmt: skip
    assert page.status_code == 400 and b"5-banana" in page.content
    assert not Evaluation.objects.exists()


def test_a_queued_evaluation_is_cancelled_at_once(client_for, alice, acme):
    from webapp.evals.services import evaluation_create

    version = register_builtin(acme, "guess-number")
    evaluation = evaluation_create(team=acme, user=alice, model_name="tiny-local", versions=[version], start=False)
    client_for(alice).post(reverse("evals:eval-cancel", args=[evaluation.pk]))
    evaluation.refresh_from_db()
    assert evaluation.status == EvalStatus.CANCELLED


def test_a_512_episode_evaluation_is_read_a_page_at_a_time(client_for, alice, two_evals):
    _, base, _ = two_evals
    played(base, {seed: float(seed % 3 == 0) for seed in range(100, 608)})  # 512 episodes in all
    first = client_for(alice).get(reverse("evals:eval-detail", args=[base.pk]))
    assert first.content.decode().count("/episodes/") == 50, "a link to each episode of the page"
    assert len(first.context["episodes"]) == 50 and "Page 1 of 11 (512 episodes)" in first.content.decode()
    last = client_for(alice).get(reverse("evals:eval-detail", args=[base.pk]), {"page": 11})
    assert len(last.context["episodes"]) == 12 and 'id="next-page"' not in last.content.decode()
    failed = client_for(alice).get(reverse("evals:eval-detail", args=[base.pk]), {"filter": "failed", "page": 2})
    assert all(not e.success for e in failed.context["episodes"]) and "filter=failed" in failed.content.decode()
    assert client_for(alice).get(reverse("evals:eval-detail", args=[base.pk]), {"page": "x"}).status_code == 200
