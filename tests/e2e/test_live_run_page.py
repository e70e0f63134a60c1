"""A person's path, in a real headless Chromium against a live Daphne, a real Redis and a real worker: log in,
create a run through the form, and watch it live without reloading."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ARTIFACTS, log_in, member_who_logs_in
from tests.webapp.runs.conftest import register_builtin

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def guess_version(acme):
    """dana, a member of Acme with a password, and Acme's guess-number (made before the browser's event loop
    starts: the ORM refuses to run inside one)."""
    member_who_logs_in(acme)
    return register_builtin(acme, "guess-number")


@pytest.fixture
def runs_finished():
    """After the browser closed: stop what the test started, so the worker is free for the next test."""
    yield
    from tests.workers.conftest import wait_final
    from webapp.runs.models import ACTIVE_STATUSES, Run
    from webapp.runs.services import run_request_cancel

    for run in Run.objects.filter(status__in=ACTIVE_STATUSES):
        run_request_cancel(run=run, user=None)
        wait_final(run, timeout=60)


def test_create_a_run_and_watch_it_live(guess_version, runs_finished, tiny_model, live_worker, daphne_server, browser):
    version = guess_version
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, daphne_server, "dana")

    page.goto(daphne_server + "/runs/new/")
    page.select_option("#id_env_version", str(version.pk))
    page.fill("#id_max_steps", "8")
    page.fill("#id_temperature", "0.7")
    page.fill("#id_learning_rate", "0.00002")
    page.fill("#id_max_completion_length", "256")
    page.click("#start-run")
    page.wait_for_url("**/runs/*/", timeout=120_000)

    # Status changes arrive over the socket: record every status the chip shows, without reloading.
    page.evaluate("""() => { window.seenStatuses = [document.getElementById('run-status').textContent];
        new MutationObserver(() => window.seenStatuses.push(document.getElementById('run-status').textContent))
          .observe(document.getElementById('run-status'), {childList: true, characterData: true, subtree: true}); }""")
    reached_running = "() => window.seenStatuses.includes('running') || window.trainyardRun.status === 'running'"
    page.wait_for_function(reached_running, timeout=180_000)
    reward_points = "() => (window.trainyardRun.series.reward || {step: []}).step.length >= 2"
    page.wait_for_function(reward_points, timeout=300_000)
    page.wait_for_selector(".episode .turn.tool", timeout=300_000)
    page.wait_for_function("() => document.querySelectorAll('#charts canvas').length >= 1")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "run-page.png"), full_page=True)
    assert page.locator(".episode .turn.assistant code").count() >= 1  # a tool call with its arguments

    # Cancel: the page comes back (the form's redirect) and then follows the status live, buttons included.
    assert page.is_visible("#cancel-run") and not page.is_visible("#resume-form button")
    page.click("#cancel-run")
    page.wait_for_load_state()
    page.evaluate("() => { window.notReloaded = true; }")
    page.wait_for_function("() => window.trainyardRun.status === 'cancelled'", timeout=120_000)
    assert page.evaluate("() => window.notReloaded") is True
    assert not page.is_visible("#cancel-run") and page.is_visible("#resume-form button")
    assert page.inner_text("#run-progress").endswith("%)") and " ·  · " not in page.inner_text(".run-head")
    assert not errors, errors
