"""The evaluation numbers against direct computation: pass@k by enumerating every draw of k samples, intervals that
contain the value and shrink with more episodes, a paired difference that sees a real improvement."""

from __future__ import annotations

import itertools
import random

import pytest

from webapp.evals.statistics import avg_at_k, bootstrap, difference, pass_at, pass_at_k, success_rate


@pytest.mark.parametrize(("n", "c", "k"), [(1, 0, 1), (1, 1, 1), (4, 1, 2), (5, 2, 3), (8, 3, 1), (8, 0, 8), (8, 7, 4)])
def test_pass_at_k_is_the_chance_that_a_draw_of_k_holds_a_success(n, c, k):
    samples = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(range(n), k))
    direct = sum(any(samples[i] for i in draw) for draw in draws) / len(draws)
    assert pass_at_k(n, c, k) == pytest.approx(direct)


def test_pass_at_k_refuses_impossible_counts():
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def test_the_statistics_over_episodes():
    groups = [[1.0, 0.0], [0.0, 0.0], [0.5, 1.0]]  # three episodes, k = 2
    assert avg_at_k(groups) == pytest.approx((0.5 + 0.0 + 0.75) / 3)
    assert success_rate(0.0)(groups) == pytest.approx((0.5 + 0 + 1) / 3)
    assert pass_at(1, 0.0)(groups) == pytest.approx((0.5 + 0 + 1) / 3)
    assert pass_at(2, 0.0)(groups) == pytest.approx((1 + 0 + 1) / 3)


def test_an_interval_holds_its_value_is_reproducible_and_narrows_with_more_episodes():
    rng = random.Random(1)
    few = [[rng.random() for _ in range(4)] for _ in range(10)]
    many = few + [[rng.random() for _ in range(4)] for _ in range(390)]
    a, b = bootstrap(few, avg_at_k, seed=3), bootstrap(few, avg_at_k, seed=3)
    assert a == b and a.low <= a.value <= a.high
    wide, narrow = a.high - a.low, (lambda i: i.high - i.low)(bootstrap(many, avg_at_k))
    assert narrow < wide / 3


def test_a_paired_difference_sees_an_improvement_that_noise_would_hide():
    rng = random.Random(2)
    difficulty = [rng.random() for _ in range(40)]  # seeds differ far more than training changes them
    before = [[d + rng.gauss(0, 0.02) for _ in range(2)] for d in difficulty]
    after = [[d + 0.05 + rng.gauss(0, 0.02) for _ in range(2)] for d in difficulty]
    paired = difference(before, after)
    assert paired.low > 0 and paired.value == pytest.approx(0.05, abs=0.02)
    unpaired_before, unpaired_after = bootstrap(before, avg_at_k), bootstrap(after, avg_at_k)
    assert unpaired_after.low < unpaired_before.high  # apart, the two intervals overlap: pairing is what decides
    same = difference(before, before)
    assert same.low <= 0 <= same.high
