"""Pages while a run is watched: the runs list and a run page, timed while 50 WebSocket viewers watch a run that
publishes every 50 ms, on Daphne with channels-redis and PostgreSQL. Baseline in the same run: the same pages with
nobody watching and nothing published. One JSON line last (goal: p95 <= 200 ms under load).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time

from pg_setup import ROOT, setup, teardown
from smoke import SMOKE, smoke_marked

VIEWERS = 3 if SMOKE else int(os.environ.get("BENCH_VIEWERS", "50"))
PUBLISH_EVERY = 0.05
REQUESTS = 3 if SMOKE else 40  # per page and phase
RUNS_IN_LIST = 3 if SMOKE else 30


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    setup()
    try:
        measure()
    finally:
        teardown()


def seed():
    """A team with a page of runs, one of them with a realistic history: 2,000 steps of metrics, 400 episodes."""
    from tests.factories import MembershipFactory, TeamFactory, UserFactory
    from webapp.catalog.models import Environment, EnvironmentVersion
    from webapp.runs.metric_writes import points_write
    from webapp.runs.models import Episode, Run

    team = TeamFactory(name="bench", slug="bench")
    user = UserFactory(username="viewer")
    MembershipFactory(team=team, user=user, role="member")
    env = Environment.objects.create(team=team, name="b", slug="b")
    version = EnvironmentVersion.objects.create(environment=env, label="1", source_kind="builtin",
                                                source_ref="guess-number", pinned_ref="x")  # fmt: skip
    runs = [Run.objects.create(team=team, name=f"run-{i}", env_version=version, model_name="tiny-local",
                               config={"max_steps": 2000}, max_steps=2000, status="running")
            for i in range(RUNS_IN_LIST)]  # fmt: skip
    watched = runs[0]
    names = ["reward", "reward_std", "loss", "kl", "entropy", "completions/mean_length", "num_tokens", "grad_norm"]
    points_write(watched.pk, [(name, step, 0.001 * step, 1e9 + step) for name in names for step in range(1, 2001)])
    for run in runs[1:]:
        points_write(run.pk, [("reward", step, 0.01 * step, 1e9 + step) for step in range(1, 41)])
    turns = [{"role": "assistant", "content": "guess 7"}, {"role": "tool", "name": "guess", "content": "higher"}]
    Episode.objects.bulk_create(
        Episode(run=watched, step=s, group=g, index_in_group=i, reward=0.5, prompt="Find the number.", turns=turns)
        for s in range(1, 101) for g in range(1) for i in range(4)
    )  # fmt: skip
    Run.objects.filter(pk=watched.pk).update(step=2000)
    return user, watched


def measure() -> None:
    import httpx
    from django.test import Client

    user, watched = seed()
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "webapp.asgi:application"], cwd=ROOT, env=dict(os.environ),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    pages = {"runs list": "/runs/", "run page": f"/runs/{watched.pk}/"}
    publisher = viewers = None
    try:
        wait_for_port(port)
        http = httpx.Client(base_url=base, headers={"Cookie": cookie}, timeout=30)
        for path in pages.values():  # warm: the first request imports templates
            assert http.get(path).status_code == 200
        idle = {name: timed(http, path) for name, path in pages.items()}

        stop = multiprocessing.get_context("spawn").Event()
        publisher = multiprocessing.get_context("spawn").Process(target=publish_forever, args=(watched.pk, stop))
        publisher.start()
        viewers = subprocess.Popen([sys.executable, __file__, "--viewers", str(port), cookie, str(watched.pk),
                                    *(["--smoke"] if SMOKE else [])],
                                   cwd=ROOT, stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert viewers.stdout.readline().strip() == "ready"
        time.sleep(0.3 if SMOKE else 2)  # let the fan-out reach its steady state
        loaded = {name: timed(http, path) for name, path in pages.items()}
        stop.set()
        publisher.join(30)
        viewers.terminate()
        received = viewers.communicate(timeout=30)[0].strip().splitlines()
    finally:
        if viewers is not None and viewers.poll() is None:
            viewers.kill()
        server.terminate()
        server.wait(10)
    frames = int(received[-1]) if received and received[-1].isdigit() else 0
    worst = max(percentile(v, 0.95) for v in loaded.values()) * 1e3
    for name in pages:
        quiet, busy = idle[name], loaded[name]
        print(f"{name}: idle p50 {statistics.median(quiet) * 1e3:.0f} ms p95 {percentile(quiet, 0.95) * 1e3:.0f} ms; "
              f"with {VIEWERS} viewers p50 {statistics.median(busy) * 1e3:.0f} ms "
              f"p95 {percentile(busy, 0.95) * 1e3:.0f} ms")  # fmt: skip
    print(f"{VIEWERS} viewers received {frames} frames while the pages were timed")
    print(
        json.dumps(
            smoke_marked(
                {
                    "metric": "page_p95_ms_under_50_viewers",
                    "value": round(worst, 1),
                    "unit": "ms",
                    "goal": "<= 200 ms",
                    "frames_received": frames,
                    "baseline": {name: round(percentile(v, 0.95) * 1e3, 1) for name, v in idle.items()},
                    "loaded": {name: round(percentile(v, 0.95) * 1e3, 1) for name, v in loaded.items()},
                }
            )
        )
    )


def wait_for_port(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("daphne did not start")


def timed(http, path: str) -> list[float]:
    samples = []
    for _ in range(REQUESTS):
        started = time.perf_counter()
        response = http.get(path)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
    return samples


def publish_forever(run_id: int, stop) -> None:
    """A trainer's stream: metrics and an episode every 50 ms."""
    import django

    django.setup()
    from webapp.live.publish import flush, publish

    step = 2000
    while not stop.is_set():
        step += 1
        publish(run_id, [("run.metrics", {"step": step, "values": {"reward": 0.5, "loss": 0.1}}),
                         ("run.episode", {"step": step, "episode": {"reward": 0.5, "turns": []}})])  # fmt: skip
        time.sleep(PUBLISH_EVERY)
    flush(30)


def run_viewers(port: str, cookie: str, run_id: str) -> None:
    import websockets

    frames = 0

    async def viewer(opened: list[int]) -> None:
        nonlocal frames
        headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws/runs/{run_id}/?after=0",
                                      additional_headers=headers, max_size=2**24) as ws:  # fmt: skip
            opened.append(1)
            async for _ in ws:
                frames += 1

    async def main_viewers() -> None:
        opened: list[int] = []
        tasks = [asyncio.create_task(viewer(opened)) for _ in range(VIEWERS)]
        while len(opened) < VIEWERS:
            await asyncio.sleep(0.05)
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        import signal

        loop.add_signal_handler(signal.SIGTERM, stopped.set)
        await stopped.wait()
        for task in tasks:
            task.cancel()
        print(frames, flush=True)

    asyncio.run(main_viewers())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--viewers":
        run_viewers(*sys.argv[2:5])
    else:
        main()
