"""A run launched outside Trainyard, watched in a real headless Chromium: a plain TRL GRPO script (no worker, no
database) reports through the client to a live Daphne; its run page draws the reward curve and the episodes as they
arrive, without reloading; and compare shows it beside a worker's run of the same settings."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.client.test_trl_script import TRL_SCRIPT
from tests.conftest import subprocess_env
from tests.e2e.conftest import ARTIFACTS, PASSWORD, log_in
from tests.webapp.runs.conftest import register_builtin

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SETTINGS = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 128,
            "max_tool_calling_iterations": 3, "learning_rate": 5e-5, "temperature": 0.7, "max_steps": 3}  # fmt: skip


def orm(function, *args, **kwargs):
    """The ORM from a thread of its own: the browser's event loop runs in this one, and Django refuses that."""
    from django.db import connection

    def call():
        try:
            return function(*args, **kwargs)
        finally:
            connection.close()  # this thread's own: nothing may hold the test database when it is dropped

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


@pytest.fixture
def dana_and_version(acme):
    from tests.factories import MembershipFactory, UserFactory
    from webapp.tokens.services import token_create

    user = UserFactory(username="dana")
    user.set_password(PASSWORD)
    user.save()
    MembershipFactory(team=acme, user=user, role="member")
    return token_create(user=user, team=acme, name="script", scope="write")[1], register_builtin(acme, "guess-number")


def test_a_plain_trl_script_s_run_is_watched_live_and_compared(dana_and_version, acme, tiny_model, live_worker,
                                                               daphne_server, browser, tmp_path):  # fmt: skip
    from tests.workers.conftest import wait_final
    from webapp.runs.models import Run
    from webapp.runs.services import run_create

    token, version = dana_and_version
    worker_run = orm(run_create, team=acme, user=None, env_version=version, config=SETTINGS,
                     trust_override_reason="fixture: trust is tested elsewhere")  # fmt: skip
    (tmp_path / "train.py").write_text(TRL_SCRIPT)
    with (tmp_path / "script.log").open("wb") as log:
        script = subprocess.Popen(
            [sys.executable, str(tmp_path / "train.py"), str(tiny_model)], cwd=tmp_path, stdout=log,
            stderr=subprocess.STDOUT,
            env=subprocess_env(TRAINYARD_URL=daphne_server, TRAINYARD_TOKEN=token, STEPS="5", STEP_PAUSE="2",
                               TRAINYARD_SPOOL_DIR=str(tmp_path / "spool"),
                               DATABASE_URL="postgres://nobody@127.0.0.1:1/none"),  # it needs no database
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not orm(lambda: Run.objects.filter(kind="external").exists()):
            assert script.poll() is None and time.monotonic() < deadline, (tmp_path / "script.log").read_text()[-3000:]
            time.sleep(0.3)
        external = orm(lambda: Run.objects.get(kind="external"))

        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        log_in(page, daphne_server, "dana")
        page.goto(f"{daphne_server}/runs/{external.pk}/")
        page.evaluate("() => { window.notReloaded = true; }")
        assert page.is_visible("#run-external") and "train.py" in page.inner_text("#run-external")
        at_open = page.evaluate("() => (window.trainyardRun.series.reward || {step: []}).step.length")
        assert at_open < 5, "the page must open before the script's last step to watch them arrive"
        page.wait_for_function("() => (window.trainyardRun.series.reward || {step: []}).step.length >= 5",
                               timeout=300_000)  # fmt: skip
        page.wait_for_selector(".episode .turn.tool", timeout=120_000)
        page.wait_for_function("() => window.trainyardRun.status === 'succeeded'", timeout=120_000)
        assert page.evaluate("() => window.notReloaded") is True
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "external-run-page.png"), full_page=True)
        assert script.wait(timeout=120) == 0

        worker_run = orm(wait_final, worker_run, timeout=600)
        assert worker_run.status == "succeeded", worker_run.failure_reason
        page.goto(f"{daphne_server}/runs/compare/?runs={worker_run.pk},{external.pk}")
        assert page.locator(f'[data-run="{external.pk}"]').is_visible()
        assert page.locator(f'[data-run="{worker_run.pk}"]').is_visible()
        series = page.evaluate(f"""async () => (await (await fetch('/runs/compare/metrics.json?runs={worker_run.pk},
            {external.pk}&names=reward')).json()).runs""".replace("\n            ", ""))  # fmt: skip
        assert len(series[str(worker_run.pk)]["reward"]["step"]) == 3
        assert len(series[str(external.pk)]["reward"]["step"]) == 5
        page.screenshot(path=str(ARTIFACTS / "compare-external.png"), full_page=True)
        assert not errors, errors
    finally:
        if script.poll() is None:
            script.kill()
