"""A server that already runs elsewhere (a team's cluster, a Hugging Face Space): we only check its health."""

from __future__ import annotations

from urllib.parse import urlparse

from envs.providers.base import Deployment, EnvSource, ProvisionError, is_healthy


class UrlProvider:
    kind = "url"

    def __init__(self, *, timeout: float = 5.0) -> None:
        self.timeout = timeout

    def provision(self, source: EnvSource, *, replicas: int = 1, labels: dict[str, str] | None = None) -> Deployment:
        if source.kind != "url":
            raise ProvisionError(f"the url provider needs a url source, not {source.kind}")
        endpoints = [u.strip().rstrip("/") for u in source.reference.split(",") if u.strip()]
        for endpoint in endpoints:
            parsed = urlparse(endpoint)
            if parsed.scheme not in {"http", "https"} or not parsed.netloc:
                raise ProvisionError(f"{endpoint!r} is not an http(s) URL")
            if not is_healthy(endpoint, timeout=self.timeout):
                raise ProvisionError(f"{endpoint} did not answer GET /health with 200 within {self.timeout:g} s")
        # Replicas of a remote server are what the URL list names; we cannot start more.
        deployment = Deployment.new(self.kind, source, labels)
        deployment.endpoints = endpoints
        return deployment

    def health(self, deployment: Deployment) -> list[bool]:
        return [is_healthy(e, timeout=self.timeout) for e in deployment.endpoints]

    def dead_replicas(self, deployment: Deployment) -> list[str]:
        """A server that is not ours: its end shows as failed steps, not here."""
        return []

    def restart_replica(self, deployment: Deployment, index: int, source: EnvSource) -> None:
        raise ProvisionError(f"{deployment.endpoints[index]} is not ours to restart (a URL version's server)")

    def teardown(self, deployment: Deployment) -> None:
        """Nothing to stop: the server is not ours."""
