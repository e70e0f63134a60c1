"""The run socket through the full ASGI stack (sessions, origin check, auth) and a real Redis channel layer."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from tests.webapp.runs.conftest import register_builtin
from webapp.asgi import application
from webapp.live.publish import flush, publish
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


def session_headers(user) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    return [(b"cookie", cookie.encode()), (b"origin", b"http://testserver"), (b"host", b"testserver")]


@pytest.fixture(autouse=True)
async def _thread_connections_closed():
    """sync_to_async runs the ORM on a thread of its own; its connection must close, or the test database stays
    in use and cannot be dropped at the end."""
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
def run(acme, alice):
    version = register_builtin(acme, "guess-number")
    return run_create(team=acme, user=alice, env_version=version, start=False)  # seq 1: run.status queued


async def connect(path: str, headers=None) -> tuple[WebsocketCommunicator, bool]:
    communicator = WebsocketCommunicator(application, path, headers=headers or [])
    connected, _ = await communicator.connect()
    return communicator, connected


async def receive_seqs(communicator, count: int) -> list[int]:
    seqs: list[int] = []
    while len(seqs) < count:
        message = await communicator.receive_json_from(timeout=5)
        seqs += [m["seq"] for m in message["messages"]]
    return seqs


async def test_anonymous_users_are_refused(run):
    _, connected = await connect(f"/ws/runs/{run.pk}/", [(b"origin", b"http://testserver")])
    assert not connected


async def test_other_teams_are_refused(run, charlie):
    headers = await sync_to_async(session_headers)(charlie)
    _, connected = await connect(f"/ws/runs/{run.pk}/", headers)
    assert not connected


async def test_a_foreign_origin_is_refused(run, alice):
    headers = [h for h in await sync_to_async(session_headers)(alice) if h[0] != b"origin"]
    _, connected = await connect(f"/ws/runs/{run.pk}/", [*headers, (b"origin", b"http://evil.example")])
    assert not connected


async def test_catch_up_after_a_disconnect_yields_exactly_the_missed_messages(run, alice):
    headers = await sync_to_async(session_headers)(alice)
    emit = sync_to_async(lambda n: publish(run.pk, [("run.log", {"line": f"line {i}"}) for i in range(n)]))

    first, connected = await connect(f"/ws/runs/{run.pk}/?after=0", headers)
    assert connected
    assert await receive_seqs(first, 1) == [1]  # the stored queued status, replayed
    await emit(2)
    assert await receive_seqs(first, 2) == [2, 3]  # live
    await first.disconnect()

    await emit(3)  # missed while away: seqs 4, 5, 6
    await sync_to_async(flush)()
    second, connected = await connect(f"/ws/runs/{run.pk}/?after=3", headers)
    assert connected
    assert await receive_seqs(second, 3) == [4, 5, 6]
    await emit(1)
    assert await receive_seqs(second, 1) == [7]
    await asyncio.sleep(0.3)
    assert await second.receive_nothing(timeout=0.5)  # nothing twice
    await second.disconnect()


async def test_the_runs_list_socket_gets_status_changes_of_the_users_teams(run, alice):
    from webapp.runs.models import Status
    from webapp.runs.services import run_transition

    headers = await sync_to_async(session_headers)(alice)
    communicator, connected = await connect("/ws/runs/", headers)
    assert connected
    await sync_to_async(run_transition)(run, Status.PROVISIONING)
    message = await communicator.receive_json_from(timeout=5)
    assert message["run_id"] == run.pk and message["messages"][0]["status"] == "provisioning"
    await communicator.disconnect()


async def test_the_runs_list_socket_gets_steps_and_rewards_of_its_teams_runs_only(run, alice, charlie):
    from workers.training.recording import MetricRecorder

    alices_list, connected = await connect("/ws/runs/", await sync_to_async(session_headers)(alice))
    assert connected
    charlies_list, connected = await connect("/ws/runs/", await sync_to_async(session_headers)(charlie))
    assert connected

    def train_two_steps() -> None:
        recorder = MetricRecorder(run)
        recorder.record(1, {"reward": 0.25, "loss": 1.0})
        recorder.record(2, {"reward": 0.75, "loss": 0.5})
        recorder.flush()
        flush()

    await sync_to_async(train_two_steps)()
    progress = []
    while not any(m.get("step") == 2 for m in progress):
        message = await alices_list.receive_json_from(timeout=5)
        assert message["run_id"] == run.pk
        progress += [m for m in message["messages"] if m["type"] == "run.progress"]
    rewards = [pair for m in progress for pair in m.get("rewards", [])]
    assert rewards == [[1, 0.25], [2, 0.75]]
    assert progress[-1]["max_steps"] == run.max_steps
    assert await charlies_list.receive_nothing(timeout=0.5)  # another team's runs never reach charlie
    await alices_list.disconnect()
    await charlies_list.disconnect()


async def test_a_fast_publisher_costs_a_page_few_frames_and_loses_nothing(run, alice):
    headers = await sync_to_async(session_headers)(alice)
    communicator, connected = await connect(f"/ws/runs/{run.pk}/?after=1", headers)
    assert connected

    def burst() -> None:  # a trainer publishing as fast as it can, one message at a time
        for i in range(200):
            publish(run.pk, [("run.log", {"line": f"line {i}"})])
        flush()

    await sync_to_async(burst)()
    frames, seqs = 0, []
    while len(seqs) < 200:
        message = await communicator.receive_json_from(timeout=5)
        frames += 1
        seqs += [m["seq"] for m in message["messages"]]
    assert seqs == list(range(2, 202))  # every message, in order, once
    assert frames <= 40  # merged: at most one frame per 50 ms, not one per publish
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()
