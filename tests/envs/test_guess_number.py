"""guess-number, driven through OpenEnv's own client over a real socket."""

from __future__ import annotations

import pytest
from openenv.core.generic_client import GenericEnvClient


@pytest.fixture
def game(served):
    with GenericEnvClient(base_url=served("guess-number")).sync() as client:
        yield client


def secret_by_bisection(game, seed: int) -> tuple[int, list]:
    game.reset(seed=seed)
    low, high, results = 1, 16, []
    while True:
        guess = (low + high) // 2
        result = game.step({"number": guess})
        results.append(result)
        hint = result.observation["hint"]
        if hint == "correct":
            return guess, results
        low, high = (guess + 1, high) if hint == "higher" else (low, guess - 1)


def test_bisection_finds_the_number_and_is_paid(game):
    secret, results = secret_by_bisection(game, seed=7)
    assert results[-1].done is True
    assert 0.5 <= results[-1].reward <= 1.0
    assert all(r.reward == 0.0 for r in results[:-1])
    assert 1 <= secret <= 16


def test_the_same_seed_hides_the_same_number(game):
    first, _ = secret_by_bisection(game, seed=11)
    second, _ = secret_by_bisection(game, seed=11)
    assert first == second


def test_fewer_guesses_pay_more(game):
    secret, results = secret_by_bisection(game, seed=3)
    game.reset(seed=3)
    direct = game.step({"number": secret})
    assert direct.reward == 1.0
    if len(results) > 1:
        assert results[-1].reward < direct.reward


def test_running_out_of_guesses_ends_with_nothing(game):
    game.reset(seed=5, max_guesses=2)
    secret, _ = secret_by_bisection(game, seed=5)
    game.reset(seed=5, max_guesses=2)
    wrong = 1 if secret != 1 else 2
    first = game.step({"number": wrong})
    second = game.step({"number": wrong})
    assert (first.done, second.done) == (False, True)
    assert second.reward == 0.0


def test_the_secret_never_appears_in_observations(game):
    result = game.reset(seed=9)
    state = game.state()
    assert "secret" not in result.observation
    assert str(state["secret"]) not in result.observation["message"]


def test_a_non_number_is_refused_with_a_validation_error(served):
    from envs.session import EnvError, EnvSession

    with EnvSession(served("guess-number")) as session:
        session.reset(seed=1)
        with pytest.raises(EnvError, match="VALIDATION_ERROR"):
            session.step({"number": "seven"})
