"""The docker provider against a real engine. CI sets TRAINYARD_DOCKER=required when it started one: there a
missing engine fails these tests instead of skipping them."""

from __future__ import annotations

import os

import pytest

from envs.providers import EnvSource, ProvisionError
from envs.session import EnvSession
from tests.conftest import require_docker
from tests.envs.conftest import builtin_source

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def docker_provider():
    from envs.providers.docker import DockerProvider

    require_docker()
    provider = DockerProvider(
        base_image=os.environ.get("TRAINYARD_DOCKER_BASE_IMAGE", "python:3.11-slim"),
        network=os.environ.get("TRAINYARD_DOCKER_NETWORK", "trainyard-envs"),
        memory="512m",
        progress=print,
    )
    # Containers an earlier, killed test session left on this engine would confuse the assertions below.
    for container in provider.managed_containers():
        if container.labels.get("trainyard.run", "").startswith("test-"):
            container.remove(force=True)
    return provider


def test_a_locked_down_container_serves_the_environment_and_is_removed(docker_provider):
    deployment = docker_provider.provision(builtin_source("guess-number", capacity=4), labels={"run": "test-42"})
    try:
        with EnvSession(deployment.endpoints[0]) as session:
            assert session.reset(seed=1).observation["hint"] == "start"
            assert session.step({"number": 8}).observation["guesses_left"] == 5
        (container,) = docker_provider.managed_containers(deployment=deployment.deployment_id)
        host = container.attrs["HostConfig"]
        assert host["ReadonlyRootfs"] is True
        assert host["CapDrop"] == ["ALL"]
        assert "no-new-privileges" in host["SecurityOpt"]
        assert host["Memory"] == 512 * 1024**2
        assert host["NanoCpus"] == 10**9
        assert host["PidsLimit"] == 256
        assert "/tmp" in host["Tmpfs"]
        assert container.attrs["Config"]["User"] == "65532:65532"
        assert container.labels["trainyard.run"] == "test-42"
        assert container.labels["trainyard.deployment"] == deployment.deployment_id
    finally:
        docker_provider.teardown(deployment)
    assert docker_provider.managed_containers(deployment=deployment.deployment_id) == []


def test_images_are_cached_by_content(docker_provider):
    source = builtin_source("guess-number")
    assert docker_provider.image_for(source) == docker_provider.image_for(source)


def test_a_container_that_is_not_healthy_in_time_is_reported_with_its_log_and_removed(docker_provider):
    from envs.providers.docker import DockerProvider

    impatient = DockerProvider(
        base_image=docker_provider.base_image, network=docker_provider.network, start_timeout=0.5,
        client=docker_provider.client,
    )  # fmt: skip
    with pytest.raises(ProvisionError, match="log ends with") as caught:
        impatient.provision(builtin_source("guess-number"), labels={"run": "test-timeout"})
    assert "not healthy" in str(caught.value)
    assert docker_provider.managed_containers(run="test-timeout") == []


def test_an_unknown_image_is_a_clear_error(docker_provider):
    with pytest.raises(ProvisionError, match="cannot be pulled"):
        docker_provider.provision(EnvSource("image", "trainyard-test/does-not-exist:never"))


def test_orphans_of_a_run_are_reaped(docker_provider):
    deployment = docker_provider.provision(builtin_source("guess-number"), labels={"run": "test-orphan"})
    # The worker that owned this deployment died: only the labels are left to find its container by.
    removed = docker_provider.reap(run="test-orphan")
    assert removed == [f"trainyard-{deployment.deployment_id}-0"]
    assert docker_provider.managed_containers(run="test-orphan") == []


def test_a_folder_without_a_dockerfile_gets_one_with_its_requirements(docker_provider):
    """OpenEnv's folders keep their Dockerfile in server/, FROM their registry: ours installs the same set the
    process provider's virtual environment has (here `roman`, from PyPI) and serves the folder locked down."""
    from tests.envs.conftest import FIXTURE_ENVS

    source = EnvSource("folder", str(FIXTURE_ENVS / "roman_numerals"), capacity=4, requirements=("roman>=4.0",))
    deployment = docker_provider.provision(source, labels={"run": "test-43"})
    try:
        with EnvSession(deployment.endpoints[0]) as session:
            assert session.reset(seed=3).observation["numeral"] == "VIII"
            assert session.step({"value": 3}).observation["message"] == "No: III is 3."
        (container,) = docker_provider.managed_containers(deployment=deployment.deployment_id)
        assert container.attrs["Config"]["User"] == "65532:65532"
        assert "MAX_CONCURRENT_ENVS=4" in container.attrs["Config"]["Env"]
    finally:
        docker_provider.teardown(deployment)
