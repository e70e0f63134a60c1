"""Friendly run names, W&B style: adjective-noun-number."""

from __future__ import annotations

import secrets

ADJECTIVES = [
    "amber",
    "brisk",
    "calm",
    "daring",
    "eager",
    "fuzzy",
    "gentle",
    "hazy",
    "icy",
    "jolly",
    "keen",
    "lucky",
    "mellow",
    "nimble",
    "olive",
    "proud",
    "quiet",
    "rapid",
    "sunny",
    "tidy",
    "vivid",
    "witty",
]
NOUNS = ["badger", "comet", "delta", "ember", "falcon", "glacier", "harbor", "island", "jaguar", "kestrel",
         "lagoon", "meadow", "nebula", "orchid", "pine", "quasar", "river", "summit", "tundra", "willow"]  # fmt: skip


def friendly_name(number: int) -> str:
    return f"{secrets.choice(ADJECTIVES)}-{secrets.choice(NOUNS)}-{number}"
