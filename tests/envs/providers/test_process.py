from __future__ import annotations

import psutil
import pytest

from envs.providers import ProvisionError
from envs.session import EnvSession
from tests.envs.conftest import builtin_source, child_server_pids, fixture_source


def test_it_starts_replicas_on_their_own_ports_and_stops_them(process_provider):
    deployment = process_provider.provision(builtin_source("guess-number", capacity=4), replicas=2)
    try:
        assert len(set(deployment.endpoints)) == 2
        assert deployment.capacity == 8
        assert process_provider.health(deployment) == [True, True]
        for endpoint in deployment.endpoints:
            with EnvSession(endpoint) as session:
                assert session.reset(seed=1).observation["hint"] == "start"
        pids = [server.pid for server in deployment.handles]
    finally:
        process_provider.teardown(deployment)
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in pids)
    assert process_provider.health(deployment) == [False, False]
    assert child_server_pids() == set()


def test_a_server_that_crashes_on_start_is_reported_with_its_log(process_provider):
    with pytest.raises(ProvisionError) as caught:
        process_provider.provision(fixture_source("crash_on_start"))
    assert "exited with code" in str(caught.value)
    assert "this server refuses to start" in str(caught.value)
    assert child_server_pids() == set()


def test_a_folder_without_a_server_is_refused(process_provider, tmp_path):
    from envs.providers import EnvSource

    with pytest.raises(ProvisionError, match=r"no server/app\.py"):
        process_provider.provision(EnvSource("folder", str(tmp_path)))


def test_a_server_that_never_gets_healthy_is_stopped(tmp_path):
    from envs.providers.process import ProcessProvider

    impatient = ProcessProvider(log_dir=tmp_path, start_timeout=0.01)
    with pytest.raises(ProvisionError, match=r"was not healthy at .* within"):
        impatient.provision(builtin_source("guess-number"))
    assert child_server_pids() == set()


def test_the_session_cap_is_passed_to_the_server(process_provider):
    from envs.session import EnvError

    deployment = process_provider.provision(builtin_source("guess-number", capacity=1))
    try:
        with EnvSession(deployment.endpoints[0]) as first:
            first.reset(seed=1)
            with pytest.raises(EnvError) as caught, EnvSession(deployment.endpoints[0]) as second:
                second.reset(seed=1)
            assert caught.value.code == "CAPACITY_REACHED"
    finally:
        process_provider.teardown(deployment)


def test_a_setting_may_name_the_port_its_server_listens_on():
    # OpenEnv's calendar calls its own HTTP API at API_PORT: `--env API_PORT={port}` gives it the port it was given.
    from envs.providers import EnvSource

    source = EnvSource("folder", "/tmp/x", capacity=3, env={"API_PORT": "{port}", "SELF": "http://127.0.0.1:{port}/"})
    assert source.server_env(41000) == {"API_PORT": "41000", "SELF": "http://127.0.0.1:41000/", "PORT": "41000",
                                        "MAX_CONCURRENT_ENVS": "3", "OPENENV_MAX_SESSIONS": "3"}  # fmt: skip
    assert source.server_env()["API_PORT"] == "{port}", "no port known: left as written"
