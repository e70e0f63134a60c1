from __future__ import annotations

import pytest

from envs.providers import EnvSource, ProvisionError
from envs.providers.url import UrlProvider
from envs.session import EnvSession
from tests.envs.conftest import builtin_source


def test_it_health_checks_a_server_that_runs_elsewhere(process_provider):
    elsewhere = process_provider.provision(builtin_source("grid-catch"))
    try:
        provider = UrlProvider()
        deployment = provider.provision(EnvSource("url", elsewhere.endpoints[0] + "/"))
        assert deployment.endpoints == elsewhere.endpoints
        assert provider.health(deployment) == [True]
        with EnvSession(deployment.endpoints[0]) as session:
            assert "board" in session.reset(seed=1).observation
        provider.teardown(deployment)  # not ours: it keeps running
        assert provider.health(deployment) == [True]
    finally:
        process_provider.teardown(elsewhere)


def test_an_unreachable_url_is_refused():
    with pytest.raises(ProvisionError, match="did not answer GET /health"):
        UrlProvider(timeout=1).provision(EnvSource("url", "http://127.0.0.1:9"))


def test_a_url_that_is_not_http_is_refused():
    with pytest.raises(ProvisionError, match="not an http"):
        UrlProvider().provision(EnvSource("url", "ftp://example.invalid"))
