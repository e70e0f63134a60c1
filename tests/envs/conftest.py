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
def module_servers(process_provider):
    """The servers a module started, by source: all torn down together at its end, asserting nothing is left."""
    deployments: dict[tuple[str, str], object] = {}

    def serve(key: tuple[str, str], source: EnvSource) -> str:
        if key not in deployments:
            deployments[key] = process_provider.provision(source)
        return deployments[key].endpoints[0]

    yield serve
    for deployment in deployments.values():
        process_provider.teardown(deployment)
    assert child_server_pids() == set()


@pytest.fixture(scope="module")
def served(module_servers):
    """served(slug) starts one built-in server for the module (torn down at its end)."""
    return lambda slug: module_servers(("builtin", slug), builtin_source(slug))


@pytest.fixture(scope="module")
def served_fixture(module_servers):
    """served_fixture(name) starts one of tests/fixtures/envs for the module (torn down at its end)."""
    return lambda name: module_servers(("fixture", name), fixture_source(name))
