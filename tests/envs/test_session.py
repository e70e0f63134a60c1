"""Our session enforces timeouts that OpenEnv's /ws does not, and never reuses a timed-out session."""

from __future__ import annotations

import asyncio

import pytest

from envs.session import AsyncEnvSession, EnvSession, SessionBroken
from tests.envs.conftest import fixture_source


@pytest.fixture(scope="module")
def slow_endpoint(process_provider):
    deployment = process_provider.provision(fixture_source("slow_step"))
    yield deployment.endpoints[0]
    process_provider.teardown(deployment)


def test_a_hung_step_is_cut_off_and_the_session_discarded(slow_endpoint):
    with EnvSession(slow_endpoint, timeout=0.3) as session:
        session.reset()
        with pytest.raises(SessionBroken, match=r"took longer than 0\.3 s"):
            session.step({"seconds": 5})
        # The next call must not silently talk to a fresh, never-reset session.
        with pytest.raises(SessionBroken):
            session.step({"seconds": 0})


def test_a_fast_step_within_the_limit_answers(slow_endpoint):
    with EnvSession(slow_endpoint, timeout=5) as session:
        session.reset()
        assert session.step({"seconds": 0.05}).observation["slept"] == 0.05


async def test_async_sessions_time_out_the_same_way(slow_endpoint):
    async with AsyncEnvSession(slow_endpoint, timeout=0.3) as session:
        await session.reset()
        with pytest.raises(SessionBroken):
            await session.step({"seconds": 5})
        with pytest.raises(SessionBroken):
            await session.reset()


async def test_async_sessions_step_concurrently(slow_endpoint):
    sessions = [AsyncEnvSession(slow_endpoint, timeout=10) for _ in range(4)]
    for s in sessions:
        await s.open()
        await s.reset()
    results = await asyncio.gather(*(s.step({"seconds": 0.5}) for s in sessions))
    for s in sessions:
        await s.close()
    assert [r.observation["slept"] for r in results] == [0.5] * 4
    # The server saw the steps overlap (it counts steps in flight), rather than arrive one after another.
    assert max(r.observation["in_flight"] for r in results) >= 2


def test_a_closed_port_is_a_broken_session():
    with pytest.raises(SessionBroken, match="cannot open a session"):
        EnvSession("http://127.0.0.1:9", connect_timeout=1).open()


def test_an_invalid_message_says_which_field_the_server_refused():
    # The frame OpenEnv's server sent when finqa's reset failed validation (a number where its answer is a string).
    import json

    from envs.session import EnvError, decode

    error = {"type": "string_type", "loc": ["ground_truth"], "msg": "Input should be a valid string", "input": 44}
    frame = json.dumps({"type": "error", "data": {"message": "Invalid message", "code": "VALIDATION_ERROR",
                                                  "errors": [error]}})  # fmt: skip
    with pytest.raises(EnvError) as refused:
        decode(frame)
    assert refused.value.code == "VALIDATION_ERROR"
    assert str(refused.value).endswith("Invalid message (ground_truth: Input should be a valid string (44))")
    plain = json.dumps({"type": "error", "data": {"message": "Server at capacity", "code": "CAPACITY_REACHED"}})
    with pytest.raises(EnvError, match=r"Server at capacity$"):
        decode(plain)
