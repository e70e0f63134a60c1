"""A script killed outright (SIGKILL: it cannot say anything) is crashed by the deployment itself, with its default
settings: the client beats every 10 s, beat's reap runs every 10 s on a real worker, and a run silent for
TRAINYARD_EXTERNAL_CRASH_AFTER (40 s) is crashed: within 60 s of the kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.client.test_client import SCRIPT, run_of
from tests.conftest import subprocess_env
from webapp.tokens.services import token_create

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_killed_script_is_crashed_by_beat_within_60_s(script, live_worker, acme, alice, guess_version, tmp_path):
    token = token_create(user=alice, team=acme, name="script", scope="write")[1]
    proc = script(SCRIPT % {"steps": 1000, "beat": 10, "pause": 0.5, "ending": ""}, token)
    run = run_of(proc, tmp_path)
    with (tmp_path / "beat.log").open("wb") as log:
        command = [sys.executable, "-m", "celery", "-A", "workers", "beat", "-s", str(tmp_path / "beat"), "--loglevel",
                   "INFO"]  # fmt: skip
        beat = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=subprocess_env())
    try:
        time.sleep(3)
        os.kill(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        while run.status == "running" and time.monotonic() - killed < 90:
            time.sleep(1)
            run.refresh_from_db()
        crashed_after = time.monotonic() - killed
        assert run.status == "crashed" and "stopped reporting for over 40 s" in run.failure_reason, run.status
        assert crashed_after <= 60, f"crashed {crashed_after:.0f} s after the kill"
        print(f"crashed {crashed_after:.0f} s after SIGKILL", file=sys.stderr)
    finally:
        beat.terminate()
        beat.wait(timeout=20)
