"""Publish-to-browser latency: 20 runs publishing, 5 WebSocket viewers each, on Daphne with channels-redis.

Every message carries its publish time; each viewer notes when it arrives. Baseline in the same run: the floor of
the transport, a bare Redis PUBLISH to a subscriber on the same Redis. One JSON line last (goal p99 <= 50 ms).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

from pg_setup import ROOT, setup, teardown

RUNS, VIEWERS, MESSAGES, RATE = 20, 5, 60, 10.0  # per run: MESSAGES at RATE per second


def percentile(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    setup()  # a scratch PostgreSQL database, as a server with twenty live runs would have
    try:
        measure()
    finally:
        teardown()


def measure() -> None:
    from django.conf import settings
    from django.test import Client

    from tests.factories import MembershipFactory, TeamFactory, UserFactory
    from webapp.accounts.models import Team
    from webapp.catalog.models import Environment, EnvironmentVersion
    from webapp.live.publish import flush, publish
    from webapp.runs.models import Run

    team = TeamFactory(name="bench", slug="bench")
    user = UserFactory(username="viewer")
    MembershipFactory(team=team, user=user, role="viewer")
    env = Environment.objects.create(team=Team.objects.get(pk=team.pk), name="b", slug="b")
    version = EnvironmentVersion.objects.create(environment=env, label="1", source_kind="builtin",
                                                source_ref="guess-number", pinned_ref="x")  # fmt: skip
    runs = [Run.objects.create(team=team, name=f"run-{i}", env_version=version, model_name="x", config={})
            for i in range(RUNS)]  # fmt: skip
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "webapp.asgi:application"], cwd=ROOT, env=dict(os.environ),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    latencies: list[float] = []
    ready = threading.Event()
    done = threading.Event()

    async def viewer(run_id: int, counter: list[int]) -> None:
        import websockets

        headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws/runs/{run_id}/?after=0",
                                      additional_headers=headers) as ws:  # fmt: skip
            counter[0] += 1
            while len(latencies) < RUNS * VIEWERS * MESSAGES:
                try:
                    frame = await asyncio.wait_for(ws.recv(), 10)
                except TimeoutError:
                    return
                now = time.time()
                for message in json.loads(frame)["messages"]:
                    if "sent_at" in message:
                        latencies.append(now - message["sent_at"])

    def viewers_thread() -> None:
        async def all_viewers():
            counter = [0]
            tasks = [asyncio.create_task(viewer(r.pk, counter)) for r in runs for _ in range(VIEWERS)]
            while counter[0] < len(tasks):
                await asyncio.sleep(0.05)
            ready.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            done.set()

        asyncio.run(all_viewers())

    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        threading.Thread(target=viewers_thread, daemon=True).start()
        ready.wait(60)

        def publisher(run_id: int) -> None:
            for i in range(MESSAGES):
                publish(run_id, [("run.metrics", {"step": i, "values": {"reward": 0.5}, "sent_at": time.time()})])
                time.sleep(1 / RATE)

        threads = [threading.Thread(target=publisher, args=(r.pk,)) for r in runs]
        started = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        flush(30)
        done.wait(30)
        elapsed = time.time() - started
    finally:
        server.terminate()
        server.wait(10)

    # The transport's floor: a bare Redis PUBLISH to a subscriber.
    import redis

    r = redis.Redis.from_url(settings.REDIS_URL)
    sub = r.pubsub()
    sub.subscribe("bench")
    sub.get_message(timeout=1)
    floor = []
    for _ in range(500):
        r.publish("bench", json.dumps({"sent_at": time.time()}))
        message = sub.get_message(timeout=1)
        while message is not None and message["type"] != "message":
            message = sub.get_message(timeout=1)
        floor.append(time.time() - json.loads(message["data"])["sent_at"])

    expected = RUNS * VIEWERS * MESSAGES
    p50, p99 = percentile(latencies, 0.5) * 1e3, percentile(latencies, 0.99) * 1e3
    print(
        f"{len(latencies)}/{expected} deliveries in {elapsed:.1f} s; publish→receipt p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )
    print(f"bare Redis pub/sub floor: p50 {statistics.median(floor) * 1e3:.2f} ms")
    print(json.dumps({"metric": "live_latency_p99_ms", "value": round(p99, 2), "unit": "ms", "goal": "<= 50 ms",
                      "p50_ms": round(p50, 2), "delivered": len(latencies), "expected": expected,
                      "baseline": {"redis_pubsub_p50_ms": round(statistics.median(floor) * 1e3, 3)}}))  # fmt: skip


if __name__ == "__main__":
    main()
