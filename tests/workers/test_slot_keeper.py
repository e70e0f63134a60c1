"""Hung steps keep their sessions' slots on the server; the worker restarts a replica they have filled.

Real servers (the process provider) and a real hang: beacon_edge_hang sleeps 30 s on the note "zzz".
"""

from __future__ import annotations

import pytest

from envs.adapter import ToolFailed, tool_env_class
from envs.providers.process import ProcessProvider
from envs.session import EnvError, EnvSession, SessionBroken, SessionTimedOut
from envs.tools import tools_from_action_schema
from tests.envs.conftest import fixture_source
from workers.worker.slot_keeper import SlotKeeper

HANG = {"position": 1, "note": "zzz"}


@pytest.fixture
def hanging(tmp_path):
    provider = ProcessProvider(log_dir=tmp_path)
    source = fixture_source("beacon_edge_hang", capacity=2)
    deployment = provider.provision(source)
    yield provider, deployment, source
    provider.teardown(deployment)


def sessions_held(endpoint: str, tries: int = 2) -> int:
    opened = []
    try:
        for seed in range(tries):
            session = EnvSession(endpoint, timeout=3)
            try:
                session.reset(seed=seed)
            except (EnvError, SessionBroken):
                break
            opened.append(session)
        return len(opened)
    finally:
        for session in opened:
            session.close()


def hang_one_step(endpoint: str) -> None:
    with EnvSession(endpoint, timeout=1) as session:
        session.reset(seed=1)
        with pytest.raises(SessionTimedOut):
            session.step(HANG)


def test_the_adapter_writes_down_each_session_a_timeout_cost(hanging, tmp_path):
    _, deployment, _ = hanging
    import httpx

    tools = tools_from_action_schema(httpx.get(deployment.endpoints[0] + "/schema").json()["action"])
    env_class = tool_env_class(name="beacon", tools=tools, endpoints=deployment.endpoints, step_timeout=1.0)
    env_class.lost_sessions_file = str(tmp_path / "lost.txt")
    env = env_class()
    env.reset()
    with pytest.raises(ToolFailed, match="longer than 1 s"):
        env.probe(**HANG)
    assert (tmp_path / "lost.txt").read_text().split() == [deployment.endpoints[0]]


def test_a_replica_whose_slots_hung_steps_filled_is_restarted_in_place(hanging, tmp_path):
    provider, deployment, source = hanging
    endpoint, old_pid = deployment.endpoints[0], deployment.handles[0].pid
    hang_one_step(endpoint)
    assert sessions_held(endpoint) == 1  # the hung step still holds one of the two slots

    ledger = tmp_path / "lost.txt"
    ledger.write_text(endpoint + "\n")
    said, restarted = [], []
    keeper = SlotKeeper(provider=provider, deployment=deployment, source=source, ledger=ledger,
                        needed_per_replica=2, say=said.append, restarted=restarted.append)  # fmt: skip
    keeper()

    assert deployment.endpoints[0] == endpoint and deployment.handles[0].pid != old_pid
    assert sessions_held(endpoint) == 2  # both slots back, at the same address
    assert said == ["replica 0: 1 session(s) lost to hung steps left 1 of its 2 slots, fewer than the 2 this run "
                    "holds on it: restarted it (its open sessions ended; new rollouts get all 2 slots)"]  # fmt: skip
    assert restarted == [deployment]
    keeper()  # the same lost session is not answered twice
    assert keeper.restarts == 1


def test_a_replica_with_slots_to_spare_is_left_alone(hanging, tmp_path):
    provider, deployment, source = hanging
    ledger = tmp_path / "lost.txt"
    ledger.write_text(deployment.endpoints[0] + "\n")
    said = []
    keeper = SlotKeeper(provider=provider, deployment=deployment, source=source, ledger=ledger,
                        needed_per_replica=1, say=said.append)  # fmt: skip
    pid = deployment.handles[0].pid
    keeper()
    assert said == [] and keeper.restarts == 0 and deployment.handles[0].pid == pid
