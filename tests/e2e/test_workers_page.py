"""The Workers page in a real headless Chromium: a real worker process's heartbeat, and the queue in order, kept
current without a reload."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import PASSWORD, log_in
from tests.e2e.test_live_runs_list import in_a_thread
from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def queue_run(team, user, name: str):
    from webapp.runs.services import run_create

    # start=False: recorded as queued but not handed to the broker, so the live worker leaves it waiting.
    return run_create(team=team, user=user, env_version=register_builtin(team, "guess-number"), name=name, start=False)


def test_the_workers_page_shows_a_live_worker_and_the_queue(acme, alice, globex, charlie, live_worker, daphne_server,
                                                            browser):  # fmt: skip
    from webapp.fleet.models import Worker

    def set_up():  # the ORM stays off Playwright's event loop thread
        for user in (alice, charlie):
            user.set_password(PASSWORD)
            user.save()
        worker = wait_for(lambda: Worker.objects.filter(name__startswith="test-worker-", capabilities__has_key="cuda")
                          .first(), timeout=120, what="the worker's heartbeat")  # fmt: skip
        return worker, queue_run(acme, alice, "first-in-line")

    worker, first = in_a_thread(set_up)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, daphne_server, "alice")
    page.click("text=Workers")
    row = f'tr[data-worker="{worker.name}"]'
    assert page.text_content(f"{row} [data-state]") == "live"
    assert "CPU" in page.text_content(f"{row} [data-capabilities]")
    assert "LoRA" in page.text_content(f"{row} [data-capabilities]")
    assert page.text_content(f'#queue tr[data-run="{first.pk}"]').count("first-in-line") == 1

    # Charlie's run joins the queue: it shows up without a reload, second, and not by name.
    in_a_thread(lambda: queue_run(globex, charlie, "globex-secret"))
    page.wait_for_selector("#queue tbody tr:nth-child(2)", timeout=15_000)
    second = page.text_content("#queue tbody tr:nth-child(2)")
    assert "a run of another team" in second and "globex-secret" not in page.content()
    assert page.text_content("#queue tbody tr:nth-child(1)").strip().startswith("1")
    assert not errors, errors

    page = browser.new_page()
    log_in(page, daphne_server, "charlie")
    page.goto(daphne_server + "/workers/")
    assert "globex-secret" in page.text_content("#queue") and "first-in-line" not in page.content()
