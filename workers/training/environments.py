"""A run's `environment_factory` for TRL: its version's environment class (webapp.catalog.environment_class), or for
a mixed run a dict of them by key."""

from __future__ import annotations

import time

from webapp.catalog.environment_class import version_env_class


def reset_stamped(env_class):
    """The adapter class whose episodes remember when they were reset: the origin of the trajectory viewer's
    timeline (each call is stamped when the turn dispatcher sends it, workers/training/concurrent_tools.py)."""

    class Stamped(env_class):
        def reset(self, **row):
            began = time.time()
            text = super().reset(**row)
            if self.episode is not None:
                self.episode.started_at = began
            return text

    Stamped.__name__, Stamped.__qualname__ = env_class.__name__, env_class.__qualname__
    return Stamped


def environment_factory(run, env_class):
    """TRL's environment_factory for a run: the adapter class, or for a mixed run a dict of them by key, with what
    each environment's default prompt needs (description, tool names)."""
    env_class = reset_stamped(env_class)
    if not run.environments:
        return env_class, None
    from webapp.artifacts.layout import run_lost_sessions_file
    from webapp.catalog.models import EnvironmentVersion

    first = run.environments[0]["key"]
    factory = {first: env_class}
    mixed = {first: (run.env_version.environment.description, [t.name for t in env_class.tools])}
    for entry in run.environments[1:]:
        version = EnvironmentVersion.objects.select_related("environment").get(pk=entry["version"])
        other = version_env_class(version, endpoints=run.deployment["environments"][entry["key"]]["endpoints"],
                                  step_timeout=run.config["step_timeout"],
                                  lost_sessions_file=run_lost_sessions_file(run.pk))  # fmt: skip
        factory[entry["key"]] = other = reset_stamped(other)
        mixed[entry["key"]] = (version.environment.description, [t.name for t in other.tools])
    return factory, mixed
