"""The numbers an evaluation reports, from its episodes: avg@k, unbiased pass@k, success rate, and 95 % intervals by
bootstrap over episodes (the prompts/seeds, each with its k samples: the unit that was drawn). Plain Python, no
Django: the evaluation job, the trainer's periodic evals and the tests compute them the same way."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of Chen et al. (2021): the chance that at least one of k samples drawn without
    replacement from n, of which c succeeded, succeeds. 1 - C(n-c, k) / C(n, k), computed as a product."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


def bootstrap(groups: Sequence[Sequence[float]], statistic: Callable[[Sequence[Sequence[float]]], float], *,
              resamples: int = 2000, seed: int = 0, level: float = 0.95) -> Interval:  # fmt: skip
    """A percentile interval of `statistic` over `groups` (one group per episode: its k samples), resampling whole
    groups with replacement. Seeded: the same episodes always give the same interval."""
    if not groups:
        raise ValueError("no episodes to measure")
    value = statistic(groups)
    rng = random.Random(seed)
    draws = sorted(statistic([groups[rng.randrange(len(groups))] for _ in groups]) for _ in range(resamples))
    tail = (1 - level) / 2
    low = draws[math.floor(tail * (resamples - 1))]
    high = draws[math.ceil((1 - tail) * (resamples - 1))]
    return Interval(value, low, high)


def avg_at_k(groups: Sequence[Sequence[float]]) -> float:
    """Mean reward over all samples of all episodes (each episode weighs the same: it has k samples)."""
    return sum(sum(g) / len(g) for g in groups) / len(groups)


def pass_at(k: int, threshold: float) -> Callable[[Sequence[Sequence[float]]], float]:
    """pass@k over episodes: a sample succeeds when its reward is above `threshold`."""

    def statistic(groups: Sequence[Sequence[float]]) -> float:
        return sum(pass_at_k(len(g), sum(r > threshold for r in g), k) for g in groups) / len(groups)

    return statistic


def success_rate(threshold: float) -> Callable[[Sequence[Sequence[float]]], float]:
    def statistic(groups: Sequence[Sequence[float]]) -> float:
        return sum(sum(r > threshold for r in g) / len(g) for g in groups) / len(groups)

    return statistic


def difference(before: Sequence[Sequence[float]], after: Sequence[Sequence[float]], *, resamples: int = 2000,
               seed: int = 0) -> Interval:  # fmt: skip
    """avg@k of `after` minus `before`, paired by episode (the same seeds, in the same order): the interval says
    whether training helped. Pairs are resampled together, so the seed's own difficulty cancels out."""
    if len(before) != len(after) or not before:
        raise ValueError("a paired difference needs the same episodes before and after")
    pairs = [(b, a) for b, a in zip(before, after, strict=True)]

    def statistic(sample: Sequence[tuple[Sequence[float], Sequence[float]]]) -> float:
        return avg_at_k([a for _, a in sample]) - avg_at_k([b for b, _ in sample])

    return bootstrap(pairs, statistic, resamples=resamples, seed=seed)  # type: ignore[arg-type]
