"""Several environments in one run (TRL's dict `environment_factory`): which versions, their keys and mixture
weights, and the dataset rows each gets. The first entry is always the run's `env_version`; a run of one
environment stores no mixture at all."""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import ValidationError

from webapp.catalog.models import EnvironmentVersion

MOST_ENVIRONMENTS = 16


def mixture_keys(versions: list[EnvironmentVersion]) -> list[str]:
    """The name each environment has in the dataset's `environment` column and in metrics (`reward/<key>`): its
    slug, or slug@version when a run mixes two versions of one environment."""
    slugs = [v.environment.slug for v in versions]
    return [f"{v.environment.slug}@{v.label}" if slugs.count(v.environment.slug) > 1 else v.environment.slug
            for v in versions]  # fmt: skip


def mixture_parse(text: str, versions: list[EnvironmentVersion]) -> list[tuple[EnvironmentVersion, float]]:
    """Lines of `SLUG[@VERSION] WEIGHT` (weight optional, 1) against the versions the user may see. Errors name the
    line."""
    chosen = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) > 2:
            raise ValidationError({"mixture": f"line {number}: write SLUG[@VERSION] WEIGHT, not {line[:60]!r}."})
        name, _, label = parts[0].partition("@")
        matches = [v for v in versions if v.environment.slug == name and (not label or v.label == label)]
        if not matches:
            raise ValidationError({"mixture": f"line {number}: no environment version {parts[0][:60]!r} you can see."})
        try:
            weight = float(parts[1]) if len(parts) == 2 else 1.0
        except ValueError:
            message = f"line {number}: the weight {parts[1][:20]!r} is not a number."
            raise ValidationError({"mixture": message}) from None
        chosen.append((max(matches, key=lambda v: v.created_at), weight))
    return chosen


def mixture_check(primary: EnvironmentVersion, primary_weight: float,
                  extra: list[tuple[EnvironmentVersion, float]]) -> None:  # fmt: skip
    versions = [primary] + [v for v, _ in extra]
    if len(versions) > MOST_ENVIRONMENTS:
        raise ValidationError({"mixture": f"a run mixes at most {MOST_ENVIRONMENTS} environments."})
    if len({v.pk for v in versions}) != len(versions):
        raise ValidationError({"mixture": "each environment version may appear once in a run."})
    for weight in [primary_weight] + [w for _, w in extra]:
        if not math.isfinite(weight) or not 0 < weight <= 1000:
            raise ValidationError({"mixture": f"mixture weights must be above 0 and at most 1000, not {weight}."})
    if not all(v.tools for v in versions):
        empty = next(v for v in versions if not v.tools)
        raise ValidationError({"mixture": f"{empty} offers no tools to call."})


def mixture_rows(entries: list[dict[str, Any]], total: int) -> list[str]:
    """The `environment` column of `total` dataset rows: each key in proportion to its weight (largest remainders),
    interleaved so that every stretch of rows mixes them."""
    weights = [e["weight"] for e in entries]
    exact = [total * w / sum(weights) for w in weights]
    counts = [math.floor(x) for x in exact]
    for i in sorted(range(len(exact)), key=lambda i: exact[i] - counts[i], reverse=True)[: total - sum(counts)]:
        counts[i] += 1
    rows: list[str] = []
    placed = [0] * len(entries)
    for _ in range(total):  # the key furthest behind its share goes next
        i = min(range(len(entries)), key=lambda i: (placed[i] + 1) / counts[i] if counts[i] else math.inf)
        placed[i] += 1
        rows.append(entries[i]["key"])
    return rows
