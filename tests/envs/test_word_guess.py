"""word-guess, driven through OpenEnv's own client over a real socket."""

from __future__ import annotations

import pytest
from openenv.core.generic_client import GenericEnvClient

from envs.word_guess.server.environment import mark, word_list


@pytest.fixture
def game(served):
    with GenericEnvClient(base_url=served("word-guess")).sync() as client:
        yield client


def test_the_word_list_ships_with_the_package():
    words = word_list()
    assert len(words) >= 100
    assert all(len(w) == 5 and w.isalpha() for w in words)


@pytest.mark.parametrize(
    ("secret", "guess", "marks"),
    [
        ("crane", "crane", "GGGGG"),
        ("crane", "nacre", "YYYYG"),
        ("apple", "paper", "YYGY."),
        ("eagle", "geese", "YY..G"),
    ],
)
def test_marks_follow_wordle_rules(secret, guess, marks):
    assert mark(secret, guess) == marks


def test_guessing_the_word_pays_and_ends(game):
    game.reset(seed=4)
    secret = game.state()["secret"]  # the test reads hidden state to play perfectly; a policy never can
    result = game.step({"word": secret})
    assert (result.reward, result.done, result.observation["feedback"]) == (1.0, True, "GGGGG")


def test_a_wrong_word_gets_per_letter_feedback(game):
    game.reset(seed=4)
    secret = game.state()["secret"]
    guess = "zzzzz" if "z" not in secret else "qqqqq"
    result = game.step({"word": guess})
    assert result.observation["feedback"] == "....."
    assert result.reward == 0.0 and result.done is False
    assert result.observation["guesses_left"] == 5


def test_a_malformed_word_costs_no_guess(game):
    game.reset(seed=4)
    result = game.step({"word": "hi"})
    assert result.observation["guesses_left"] == 6
    assert "not a 5-letter word" in result.observation["message"]
