"""Held-out seeds as people write them: `1000-1063`, `5, 9, 12`, or both mixed. Bounded, so a typo never asks for a
billion episodes."""

from __future__ import annotations

from django.core.exceptions import ValidationError

MAX_SEEDS = 4096
MAX_SEED = 2**53
# Held out when a run names none: training seeds are `seed x 1000 + row` (42,000 + row by default), far below these;
# run_create checks the two sets are disjoint whatever the settings.
DEFAULT_EVAL_SEEDS = "900000000-900000031"


def seeds_parse(text: str, *, field: str = "seeds") -> list[int]:
    """The seeds of `text`, in order, each once; a ValidationError naming `field` otherwise."""
    seeds: list[int] = []
    for part in str(text).replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            start = int(low)
            end = int(high) if sep else start
        except ValueError:
            raise ValidationError(
                {field: f"{part[:40]!r} is not a seed or a range of seeds (e.g. 1000-1063)."}
            ) from None
        if not 0 <= start <= end <= MAX_SEED:
            raise ValidationError({field: f"{part[:40]!r}: seeds run from 0 to {MAX_SEED:,}, low to high."})
        if end - start + 1 + len(seeds) > MAX_SEEDS:
            raise ValidationError({field: f"at most {MAX_SEEDS:,} seeds."})
        seeds.extend(range(start, end + 1))
    return list(dict.fromkeys(seeds))


def seeds_text(seeds: list[int]) -> str:
    """The inverse of seeds_parse, compact: consecutive runs as ranges."""
    parts: list[str] = []
    for seed in seeds:
        if parts and "-" not in parts[-1] and int(parts[-1]) == seed - 1:
            parts[-1] = f"{parts[-1]}-{seed}"
        elif parts and "-" in parts[-1] and int(parts[-1].split("-")[1]) == seed - 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{seed}"
        else:
            parts.append(str(seed))
    return ", ".join(parts)
