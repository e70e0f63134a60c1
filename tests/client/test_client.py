"""The Python client against a real server: a script's run recorded exactly once across a server outage, crashed
when the script is killed or raises, and the client's own guarantees (bounded memory, a spool, fast log calls)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from webapp.runs.external import external_runs_crash
from webapp.runs.models import Episode, MetricPoint, Run
from webapp.tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 40
SCRIPT = """
import os, time, trainyard
run = trainyard.init(environment="guess-number", name="my script", config={"lr": 1e-5}, max_steps=%(steps)d,
                     flush_every=0.2, heartbeat_every=%(beat)s)
print("RUN", run.id, flush=True)
for step in range(1, %(steps)d + 1):
    run.log({"reward": step / 10, "loss": 1 / step, "nan": float("nan")}, step=step)
    run.log_episodes([{"step": step, "group": g, "index": i, "reward": float(i), "prompt": "p%%d" %% g,
                       "turns": [{"role": "assistant", "content": "hi"}]} for g in range(2) for i in range(2)])
    time.sleep(%(pause)s)
%(ending)s
"""


@pytest.fixture
def token(acme, alice, guess_version):
    return token_create(user=alice, team=acme, name="script", scope="write")[1]


def run_of(proc, tmp_path, timeout: float = 60) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = (tmp_path / "script.log").read_text()
        if "RUN " in text:
            return Run.objects.get(pk=int(text.split("RUN ", 1)[1].split()[0]))
        assert proc.poll() is None, text
        time.sleep(0.1)
    raise AssertionError("the script never created its run")


def test_a_server_outage_mid_run_loses_nothing_and_doubles_nothing(script, web_server, token, tmp_path):
    proc = script(SCRIPT % {"steps": STEPS, "beat": 2, "pause": 0.25, "ending": "run.finish()"}, token)
    run = run_of(proc, tmp_path)
    time.sleep(2)
    web_server.stop()  # the web server is away for a while mid-run; the script trains on
    time.sleep(float(os.environ.get("CLIENT_OUTAGE_SECONDS", 8)))
    web_server.start()
    assert proc.wait(timeout=120) == 0, (tmp_path / "script.log").read_text()[-3000:]

    run.refresh_from_db()
    assert run.status == "succeeded" and run.kind == "external", run.failure_reason
    assert run.external["command"].endswith("train.py") and run.external["client"].startswith("trainyard-client/")
    steps = list(MetricPoint.objects.filter(run=run, name="reward").values_list("step", flat=True))
    assert sorted(steps) == list(range(1, STEPS + 1))  # every step once (a doubled point would break the unique key)
    assert MetricPoint.objects.filter(run=run).count() == 2 * STEPS  # reward and loss; the NaN is no point
    assert Episode.objects.filter(run=run).count() == 4 * STEPS == run.episodes_recorded  # each episode once
    assert run.step == STEPS
    assert not list((tmp_path / "spool").glob("*.jsonl")), "the spool is emptied once the server has it all"


def test_a_killed_script_s_run_is_crashed_and_a_raising_one_says_why(script, token, tmp_path):
    proc = script(SCRIPT % {"steps": 1000, "beat": 1, "pause": 0.2, "ending": ""}, token)
    run = run_of(proc, tmp_path)
    time.sleep(2)
    os.kill(proc.pid, signal.SIGKILL)  # it cannot say anything: only its silence tells
    killed = time.monotonic()
    while run.status == "running" and time.monotonic() - killed < 60:
        time.sleep(1)
        external_runs_crash(silent_for=5)  # beat's reap (every 10 s in a deployment; 40 s of silence by default)
        run.refresh_from_db()
    assert run.status == "crashed" and "stopped reporting" in run.failure_reason, run.status

    proc = script(SCRIPT % {"steps": 3, "beat": 5, "pause": 0, "ending": "raise RuntimeError('out of memory')"}, token)
    assert proc.wait(timeout=60) != 0
    raised = Run.objects.exclude(pk=run.pk).get()
    assert raised.status == "crashed" and "RuntimeError: out of memory" in raised.failure_reason
    assert MetricPoint.objects.filter(run=raised, name="reward").count() == 3  # what it logged first was sent


def test_log_never_waits_on_an_unreachable_server_and_the_spool_keeps_everything(tmp_path):
    """No server at all (a closed port): log() goes on (its speed is bench/client_overhead.py's), what overflows
    the memory queue and the batches that could not be sent go to the spool, for later. The client's own code."""
    from trainyard.run import Run as ClientRun

    run = ClientRun(url="http://127.0.0.1:9", token="ty_x", record={"id": 7, "name": "offline"},
                    spool_dir=tmp_path, flush_every=0.05)  # fmt: skip
    run._sender.max_items = 100
    for step in range(2000):
        run.log({"reward": 1.0, "loss": 0.5}, step=step)
    assert not run.flush(timeout=1)
    run._sender.stop()
    spooled = [json.loads(line) for line in run.spool_path.read_text().splitlines()]
    steps = sorted(m["step"] for record in spooled if "batch" in record for m in record["batch"]["metrics"])
    queued = sorted(item["step"] for _, item in [*run._sender._items, *run._sender._overflow])
    assert sorted(steps + queued) == list(range(2000))  # nothing lost: on disk or still queued
