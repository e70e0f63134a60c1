"""A run that mixes environments: parsing the form's lines, checking the mixture, routing rows by weight."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tests.webapp.runs.conftest import register_builtin
from webapp.runs.mixture import mixture_parse, mixture_rows
from webapp.runs.models import Run
from webapp.runs.services import run_create


@pytest.fixture
def two(acme):
    return register_builtin(acme, "guess-number"), register_builtin(acme, "word-guess")


def test_rows_follow_the_weights_and_interleave():
    entries = [{"key": "a", "weight": 3.0}, {"key": "b", "weight": 1.0}]
    rows = mixture_rows(entries, 16)
    assert rows.count("a") == 12 and rows.count("b") == 4
    assert all("b" in rows[i : i + 4] for i in range(0, 16, 4))  # every stretch of four rows has a b


def test_lines_name_versions_the_user_can_see(two):
    guess, words = two
    assert mixture_parse("word-guess 0.5\n\n", [guess, words]) == [(words, 0.5)]
    assert mixture_parse(f"word-guess@{words.label}", [guess, words]) == [(words, 1.0)]
    with pytest.raises(ValidationError, match="line 2: no environment version 'grid-catch'"):
        mixture_parse("word-guess 1\ngrid-catch 1", [guess, words])
    with pytest.raises(ValidationError, match="line 1: the weight 'lots' is not a number"):
        mixture_parse("word-guess lots", [guess, words])


def test_a_mixture_is_checked_and_stored_with_keys_and_replicas(acme, two):
    guess, words = two
    run = run_create(team=acme, user=None, env_version=guess, mixture=[(words, 0.5)], start=False)
    assert [(e["key"], e["weight"], e["version"]) for e in run.environments] == [
        ("guess-number", 1.0, guess.pk), ("word-guess", 0.5, words.pk)]  # fmt: skip
    assert all(e["replicas"] >= 1 for e in run.environments)
    for bad, named in [([(guess, 1.0)], "once"), ([(words, 0.0)], "above 0"), ([(words, float("nan"))], "above 0")]:
        with pytest.raises(ValidationError, match=named):
            run_create(team=acme, user=None, env_version=guess, mixture=bad, start=False)


def test_another_teams_private_environment_cannot_be_mixed_in(acme, globex, two):
    guess, _ = two
    theirs = register_builtin(globex, "grid-catch")
    with pytest.raises(ValidationError, match="not an environment your team may use"):
        run_create(team=acme, user=None, env_version=guess, mixture=[(theirs, 1.0)], start=False)


def test_the_form_names_a_bad_mixture_line(client_for, alice, two):
    guess, _ = two
    form = {"env_version": str(guess.pk), "model_name": "tiny-local", "provider": "process",
            "transcript_policy": "all", "mixture": "nope-env 1"}  # fmt: skip
    response = client_for(alice).post(reverse("runs:run-create"), form)
    assert response.status_code == 400
    assert "line 1: no environment version 'nope-env'" in response.context["form"].errors["mixture"][0]
    assert not Run.objects.exists()


def test_an_environment_of_the_mixture_that_no_episode_stepped_is_named(acme, alice, client_for, two):
    from webapp.runs.models import Episode

    guess, words = two
    run = run_create(team=acme, user=None, env_version=guess, mixture=[(words, 1.0)], start=False)
    calls = {"guess-number": 1, "word-guess": 0}
    for i, (key, n) in enumerate(calls.items()):
        Episode.objects.create(run=run, step=1, group=i, index_in_group=0, prompt="p", reward=0.0, environment=key,
                               num_tool_calls=n)  # fmt: skip
    page = client_for(alice).get(run.get_absolute_url()).content.decode()
    assert 'data-never-stepped="word-guess"' in page and 'data-never-stepped="guess-number"' not in page
    assert "1 of 1 episodes stepped it" in page and "0 of 1 episodes stepped it" in page
