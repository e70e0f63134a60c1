"""A run's `environment_factory` for TRL: its version's environment class (webapp.catalog.environment_class), or for
a mixed run a dict of them by key."""

from __future__ import annotations

from webapp.catalog.environment_class import version_env_class


def environment_factory(run, env_class):
    """TRL's environment_factory for a run: the adapter class, or for a mixed run a dict of them by key, with what
    each environment's default prompt needs (description, tool names)."""
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
        factory[entry["key"]] = other
        mixed[entry["key"]] = (version.environment.description, [t.name for t in other.tools])
    return factory, mixed
