"""The runs list in a real headless Chromium against a live Daphne and a real Redis: a run's chip, step count and
reward sparkline follow the run without a reload."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e.conftest import PASSWORD, log_in
from tests.webapp.runs.conftest import register_builtin

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queued_run(acme, alice):
    from webapp.runs.services import run_create

    alice.set_password(PASSWORD)
    alice.save()
    return run_create(team=acme, user=alice, env_version=register_builtin(acme, "guess-number"), start=False)


def in_a_thread(fn):
    """The ORM refuses to run on the thread where Playwright's event loop is; a trainer is elsewhere anyway."""
    from django.db import connections

    def run_and_close():
        try:
            return fn()
        finally:
            connections.close_all()  # the thread's own connection, or the test database cannot be dropped

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run_and_close).result()


def test_the_runs_list_follows_a_run_live(queued_run, daphne_server, browser):
    from webapp.live.publish import flush
    from webapp.runs.models import Status
    from webapp.runs.services import run_transition
    from workers.training.recording import MetricRecorder

    run = queued_run
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, daphne_server, "alice")
    row = f'tr[data-run="{run.pk}"]'
    assert page.text_content(f"{row} [data-status]") == "queued"
    assert page.get_attribute(f"{row} polyline", "points") == ""
    page.wait_for_timeout(500)  # the socket is open before the run moves

    def start_and_train_two_steps() -> None:
        run_transition(run, Status.PROVISIONING)
        run_transition(run, Status.RUNNING)
        recorder = MetricRecorder(run)
        recorder.record(1, {"reward": 0.25})
        recorder.record(2, {"reward": 0.75})
        recorder.flush()
        flush()

    in_a_thread(start_and_train_two_steps)
    page.wait_for_function(f"""() => document.querySelector('{row} [data-status]').textContent === 'running'""")
    page.wait_for_function(f"""() => document.querySelector('{row} polyline').getAttribute('points')
                                   .split(' ').length === 2""")  # fmt: skip
    assert page.text_content(f"{row} [data-progress]") == f"2/{run.max_steps}"
    assert page.text_content(f"{row} [data-reward]") == "0.750"
    assert not errors, errors
