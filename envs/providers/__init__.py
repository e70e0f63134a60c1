"""Providers turn an environment source into running OpenEnv servers (a Deployment) and tear them down."""

from __future__ import annotations

from envs.providers.base import Deployment, EnvSource, Provider, ProvisionError


def provider_for(kind: str, **options) -> Provider:
    if kind == "process":
        from envs.providers.process import ProcessProvider

        return ProcessProvider(**options)
    if kind == "docker":
        from envs.providers.docker import DockerProvider

        return DockerProvider(**options)
    if kind == "url":
        from envs.providers.url import UrlProvider

        return UrlProvider(**options)
    raise ValueError(f"unknown provider {kind!r} (process, docker or url)")


__all__ = ["Deployment", "EnvSource", "Provider", "ProvisionError", "provider_for"]
