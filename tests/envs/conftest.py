from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from envs.builtin import builtin_get
from envs.providers import EnvSource
from envs.providers.process import ProcessProvider

FIXTURE_ENVS = Path(__file__).resolve().parent.parent / "fixtures" / "envs"


def child_server_pids() -> set[int]:
    """Servers started for deployments (a live worker's standby server, waiting for none, is not one)."""
    me = psutil.Process()
    found = set()
    for child in me.children(recursive=True):
        try:
            command = " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "envs.providers.serve" in command and "--standby" not in command:
            found.add(child.pid)
    return found


@pytest.fixture(scope="module")
def process_provider(tmp_path_factory) -> ProcessProvider:
    return ProcessProvider(log_dir=tmp_path_factory.mktemp("env-logs"))


def builtin_source(slug: str, capacity: int = 64) -> EnvSource:
    return EnvSource("folder", str(builtin_get(slug).folder), capacity=capacity)


def fixture_source(name: str, capacity: int = 8) -> EnvSource:
    return EnvSource("folder", str(FIXTURE_ENVS / name), capacity=capacity)


@pytest.fixture(scope="module")
def served(process_provider):
    """served(slug) starts one built-in server for the module and tears it down (asserting nothing is left)."""
    deployments = {}

    def serve(slug: str):
        if slug not in deployments:
            deployments[slug] = process_provider.provision(builtin_source(slug))
        return deployments[slug].endpoints[0]

    yield serve
    for deployment in deployments.values():
        process_provider.teardown(deployment)
    assert child_server_pids() == set()


@pytest.fixture(scope="module")
def served_fixture(process_provider):
    """served_fixture(name) starts one of tests/fixtures/envs for the module and tears it down."""
    deployments = {}

    def serve(name: str) -> str:
        if name not in deployments:
            deployments[name] = process_provider.provision(fixture_source(name))
        return deployments[name].endpoints[0]

    yield serve
    for deployment in deployments.values():
        process_provider.teardown(deployment)
