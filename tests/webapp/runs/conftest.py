from __future__ import annotations

from webapp.catalog.models import Environment, EnvironmentVersion
from webapp.catalog.services import environment_create


def register_builtin(team, slug: str) -> EnvironmentVersion:
    existing = Environment.objects.filter(team=team, slug=slug).first()
    if existing:
        return existing.versions.first()
    env = environment_create(team=team, user=None, name=slug, slug=slug, source_kind="builtin", source_ref=slug,
                             description="Find a hidden whole number from higher/lower hints.")  # fmt: skip
    return env.versions.get()
