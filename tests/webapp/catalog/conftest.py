from __future__ import annotations

import pytest

from webapp.catalog.models import Environment, EnvironmentVersion


def make_version(environment: Environment, label: str = "1.0.0", **fields) -> EnvironmentVersion:
    defaults = dict(
        source_kind="builtin",
        source_ref="guess-number",
        pinned_ref="sha256:test",
        tools=[
            {
                "name": "guess",
                "description": "Guess the hidden number.",
                "parameters": {
                    "type": "object",
                    "properties": {"number": {"type": "integer", "description": "Your guess"}},
                    "required": ["number"],
                },
            }
        ],
    )
    defaults.update(fields)
    return EnvironmentVersion.objects.create(environment=environment, label=label, **defaults)


@pytest.fixture
def acme_env(acme, alice):
    env = Environment.objects.create(team=acme, name="Acme secret game", slug="acme-game", tags=["numbers"])
    make_version(env)
    return env


@pytest.fixture
def globex_env(globex, charlie):
    env = Environment.objects.create(team=globex, name="Globex maze", slug="globex-maze", tags=["maze"])
    make_version(env, source_ref="grid-catch")
    return env


@pytest.fixture
def shared_env(globex, charlie):
    env = Environment.objects.create(
        team=globex, name="Shared words", slug="shared-words", visibility="shared", tags=["words"]
    )
    make_version(env, source_ref="word-guess")
    return env
