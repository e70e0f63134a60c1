"""Publish-to-browser latency: 20 runs publishing, 5 WebSocket viewers each, on Daphne with channels-redis.

Each run publishes from a process of its own, as a run's trainer does from its worker; every message carries the
time publish() was called (so storing it in PostgreSQL counts) and each viewer notes when it arrives. Baseline in
the same run: the floor of the transport, a bare Redis PUBLISH to a subscriber on the same Redis. One JSON line last
(goal p99 <= 50 ms).
"""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pg_setup import ROOT, setup, teardown
from smoke import SMOKE, smoke_marked

RUNS, VIEWERS = (2, 2) if SMOKE else (20, 5)
# Per run: MESSAGES publishes at RATE a second. A GRPO step takes a second or more and publishes its metrics, its
# progress and its episodes (in one or two calls), so 4 a second per run is already a fast trainer.
MESSAGES, RATE = 8 if SMOKE else 60, float(os.environ.get("BENCH_RATE", "4"))


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
    latencies_file = Path(settings.DATA_DIR) / "latencies.json"
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        # One process per publishing run, a fresh interpreter as each run's trainer is. Each connects (PostgreSQL,
        # Redis) before the clock starts: a trainer connects once when its run begins, and that is not publish
        # latency. The barrier is passed twice: all connected, then go.
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(RUNS + 1)
        publishers = [context.Process(target=publisher, args=(r.pk, barrier)) for r in runs]
        for p in publishers:
            p.start()
        barrier.wait(timeout=300)
        # The viewers live in a process of their own, as browsers would: the publishers must not slow the
        # receiving side's clock-taking.
        viewers = subprocess.Popen(
            [sys.executable, __file__, "--viewers", str(port), cookie, ",".join(str(r.pk) for r in runs),
             str(latencies_file), *(["--smoke"] if SMOKE else [])],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert viewers.stdout.readline().strip() == "ready"
        barrier.wait(timeout=60)
        started = time.time()
        for p in publishers:
            p.join()
        viewers.wait(60)
        elapsed = time.time() - started
        latencies = json.loads(latencies_file.read_text())
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
    for _ in range(20 if SMOKE else 500):
        r.publish("bench", json.dumps({"sent_at": time.time()}))
        message = sub.get_message(timeout=1)
        while message is not None and message["type"] != "message":
            message = sub.get_message(timeout=1)
        floor.append(time.time() - json.loads(message["data"])["sent_at"])

    expected = RUNS * VIEWERS * MESSAGES
    # A delivery that never came is later than any that did.
    latencies = latencies + [math.inf] * (expected - len(latencies))
    p50, p99 = percentile(latencies, 0.5) * 1e3, percentile(latencies, 0.99) * 1e3
    delivered = sum(math.isfinite(x) for x in latencies)
    print(f"{delivered}/{expected} deliveries in {elapsed:.1f} s; publish→receipt p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(f"bare Redis pub/sub floor: p50 {statistics.median(floor) * 1e3:.2f} ms")
    print(
        json.dumps(
            smoke_marked(
                {
                    "metric": "live_latency_p99_ms",
                    "value": round(p99, 2) if math.isfinite(p99) else None,
                    "unit": "ms",
                    "goal": "<= 50 ms",
                    "p50_ms": round(p50, 2) if math.isfinite(p50) else None,
                    "delivered": delivered,
                    "expected": expected,
                    "baseline": {"redis_pubsub_p50_ms": round(statistics.median(floor) * 1e3, 3)},
                }
            )
        )
    )


def publisher(run_id: int, barrier) -> None:
    import django

    django.setup()
    from django.db import connections

    from webapp.core.heap import freeze_long_lived_objects
    from webapp.live.publish import flush, publish

    publish(run_id, [("run.log", {"line": "publisher connected"})])
    flush(30)
    freeze_long_lived_objects()  # as the trainer does before it trains
    barrier.wait(timeout=300)  # all connected
    barrier.wait(timeout=60)  # the viewers are watching: go
    time.sleep(random.uniform(0, 1 / RATE))  # runs are not in lockstep with each other
    for i in range(MESSAGES):
        publish(run_id, [("run.metrics", {"step": i, "values": {"reward": 0.5}, "sent_at": time.time()})])
        time.sleep(1 / RATE)
    flush(30)
    connections.close_all()


def run_viewers(port: str, cookie: str, run_ids: str, out: str) -> None:
    import websockets

    ids = [int(i) for i in run_ids.split(",")]
    expected = len(ids) * VIEWERS * MESSAGES
    latencies: list[float] = []
    everything = asyncio.Event()

    async def viewer(run_id: int, opened: list[int]) -> None:
        headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws/runs/{run_id}/?after=0",
                                      additional_headers=headers) as ws:  # fmt: skip
            opened.append(run_id)
            while len(latencies) < expected:
                try:
                    frame = await asyncio.wait_for(ws.recv(), 10)
                except TimeoutError:
                    return
                now = time.time()
                latencies.extend(now - m["sent_at"] for m in json.loads(frame)["messages"] if "sent_at" in m)
                if len(latencies) >= expected:
                    everything.set()

    async def main_viewers() -> None:
        opened: list[int] = []
        tasks = [asyncio.create_task(viewer(i, opened)) for i in ids for _ in range(VIEWERS)]
        while len(opened) < len(tasks):
            await asyncio.sleep(0.05)
        print("ready", flush=True)
        all_viewers = asyncio.gather(*tasks, return_exceptions=True)
        all_arrived = asyncio.ensure_future(everything.wait())
        await asyncio.wait([all_viewers, all_arrived], return_when=asyncio.FIRST_COMPLETED)
        all_viewers.cancel()
        all_arrived.cancel()

    asyncio.run(main_viewers())
    Path(out).write_text(json.dumps(latencies))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--viewers":
        run_viewers(*sys.argv[2:6])  # (--smoke, when given, sets the sizes above)
    else:
        main()
