"""Trust reports as a product: CLI, a worker's check on every new version, badges, and the run override."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from tests.webapp.catalog.conftest import make_version
from tests.webapp.runs.conftest import register_builtin
from webapp.catalog.models import TrustReport
from webapp.runs.services import run_create


def failed_report(version) -> TrustReport:
    return TrustReport.objects.create(
        version=version, state="done",
        results=[{"name": "clean_reset", "status": "failed", "summary": "reset is not clean", "evidence": ["x"]},
                 {"name": "capacity", "status": "passed", "summary": "ok", "evidence": []}],
    )  # fmt: skip


def test_trust_check_command_reports_every_probe(acme):
    register_builtin(acme, "guess-number")
    out = StringIO()
    call_command("trust_check", "guess-number", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["verdict"] == "passed"
    assert [p["name"] for p in body["probes"]] == [
        "clean_reset", "seed_determinism", "session_isolation", "reward_integrity", "hidden_state", "capacity",
        "timeouts",
    ]  # fmt: skip
    assert TrustReport.objects.get().verdict == "passed"
    # OpenEnv's validator ran beside the probes: the package checks (its validation: block) and the URL checks.
    modes = {v["mode"]: v for v in TrustReport.objects.get().openenv_validation}
    assert set(modes) == {"local", "url"}
    assert modes["url"]["verdict"] == "pass" and len(modes["url"]["checks"]) == 6
    local = {c["id"]: c["status"] for c in modes["local"]["checks"]}
    assert local["static.manifest"] == "pass" and "fail" not in local.values() and "error" not in local.values()


def test_the_report_page_shows_advice_and_the_validators_checks(client_for, alice, acme):
    version = register_builtin(acme, "guess-number")
    TrustReport.objects.create(
        version=version, state="done",
        results=[{"name": "timeouts", "status": "failed", "summary": "1 input(s) hang", "evidence": ["guess(x)"],
                  "advice": "What it means: a rollout waits; fix: bound the work."}],
        openenv_validation=[{"mode": "url", "verdict": "fail", "checks": [
            {"id": "health_endpoint", "status": "fail", "evidence": "GET /health: expected 200, got 503"}]}],
    )  # fmt: skip
    page = client_for(alice).get(reverse("catalog:environment-detail", args=[version.environment.pk]))
    html = page.content.decode()
    assert "What it means: a rollout waits; fix: bound the work." in html
    assert "OpenEnv's validator (URL mode)" in html and "GET /health: expected 200, got 503" in html


@pytest.mark.django_db(transaction=True)
def test_a_new_version_is_checked_by_a_worker(acme, settings, live_worker):
    from tests.workers.conftest import wait_for

    settings.TRAINYARD_TRUST_ON_ADD = True
    version = register_builtin(acme, "grid-catch")
    report = TrustReport.objects.get(version=version)

    def finished():
        report.refresh_from_db()
        return report.state in ("done", "error")

    wait_for(finished, timeout=180, what="the trust report")
    assert report.verdict == "passed", report.results or report.error


def test_a_failed_version_needs_an_override_reason_which_the_run_keeps(acme, alice, guess_version):
    failed_report(guess_version)
    with pytest.raises(ValidationError) as caught:
        run_create(team=acme, user=alice, env_version=guess_version, start=False)
    assert "clean_reset" in caught.value.message_dict["trust_override_reason"][0]
    run = run_create(team=acme, user=alice, env_version=guess_version, start=False,
                     trust_override_reason="known: the counter is cosmetic")  # fmt: skip
    assert run.trust_override_reason == "known: the counter is cosmetic"


def test_badges_show_on_the_catalog(client_for, alice, acme):
    from webapp.catalog.models import Environment

    env = Environment.objects.create(team=acme, name="Badge game", slug="badge")
    failed_report(make_version(env))
    page = client_for(alice).get(reverse("catalog:environment-list")).content.decode()
    assert "trust: failed" in page
    detail = client_for(alice).get(reverse("catalog:environment-detail", args=[env.pk])).content.decode()
    assert "reset is not clean" in detail


def test_charlie_cannot_request_checks_of_acme_versions(client_for, charlie, acme):
    from webapp.catalog.models import Environment

    env = Environment.objects.create(team=acme, name="Private", slug="private")
    version = make_version(env)
    response = client_for(charlie).post(reverse("catalog:version-trust", args=[env.pk, version.pk]))
    assert response.status_code == 404
    assert not TrustReport.objects.exists()


def test_a_viewer_cannot_request_checks(client_for, alice, acme):
    from webapp.catalog.models import Environment

    alice.memberships.update(role="viewer")
    env = Environment.objects.create(team=acme, name="Mine", slug="mine")
    version = make_version(env)
    assert client_for(alice).post(reverse("catalog:version-trust", args=[env.pk, version.pk])).status_code == 403


def test_a_member_requests_a_check(client_for, alice, acme):
    from webapp.catalog.models import Environment

    env = Environment.objects.create(team=acme, name="Mine", slug="mine")
    version = make_version(env)
    assert client_for(alice).post(reverse("catalog:version-trust", args=[env.pk, version.pk])).status_code == 302
    assert TrustReport.objects.get(version=version).state == "pending"


def passed_report(version) -> TrustReport:
    return TrustReport.objects.create(
        version=version, state="done", results=[{"name": "capacity", "status": "passed", "summary": "ok"}]
    )


@pytest.mark.parametrize("state", ["pending", "running"])
def test_a_recheck_under_way_does_not_lift_a_failure(acme, alice, guess_version, state):
    failed_report(guess_version)
    TrustReport.objects.create(version=guess_version, state=state)  # newer than the failure
    with pytest.raises(ValidationError) as caught:
        run_create(team=acme, user=alice, env_version=guess_version, start=False)
    message = caught.value.message_dict["trust_override_reason"][0]
    assert "clean_reset" in message and "re-check is under way" in message


def test_a_check_that_errored_counts_as_not_passed_even_after_a_pass(acme, alice, guess_version):
    passed_report(guess_version)
    TrustReport.objects.create(version=guess_version, state="error", error="the server did not start")
    with pytest.raises(ValidationError) as caught:
        run_create(team=acme, user=alice, env_version=guess_version, start=False)
    assert "could not finish (the server did not start)" in caught.value.message_dict["trust_override_reason"][0]


def test_a_first_check_still_pending_holds_the_run_back(acme, alice, guess_version):
    TrustReport.objects.create(version=guess_version, state="pending")
    with pytest.raises(ValidationError) as caught:
        run_create(team=acme, user=alice, env_version=guess_version, start=False)
    assert "still pending" in caught.value.message_dict["trust_override_reason"][0]


def test_the_latest_finished_pass_lets_a_run_start_while_a_recheck_is_pending(acme, alice, guess_version):
    failed_report(guess_version)
    passed_report(guess_version)
    TrustReport.objects.create(version=guess_version, state="pending")
    assert run_create(team=acme, user=alice, env_version=guess_version, start=False).trust_override_reason == ""


def test_charlie_may_testdrive_but_not_check_a_shared_acme_environment(client_for, charlie, acme):
    from webapp.catalog.models import Environment

    env = Environment.objects.create(team=acme, name="Shared", slug="shared", visibility="shared")
    version = make_version(env)
    client = client_for(charlie)
    assert client.get(reverse("catalog:version-testdrive", args=[env.pk, version.pk])).status_code == 200
    assert client.post(reverse("catalog:version-trust", args=[env.pk, version.pk])).status_code == 403
    assert not TrustReport.objects.exists()
    page = client.get(reverse("catalog:environment-detail", args=[env.pk])).content.decode()
    assert "Run trust checks" not in page


def test_trust_check_with_load_measures_and_stores_the_load_profile(acme, alice, client_for):
    from envs.trust.load_profile import levels_for

    version = register_builtin(acme, "grid-catch")
    out = StringIO()
    call_command("trust_check", "grid-catch", "--load", "--json", stdout=out)
    profile = json.loads(out.getvalue())["load_profile"]
    version.refresh_from_db()
    assert version.load_profile == profile and profile["provider"] == "process"
    levels = profile["levels"]
    assert [row["sessions"] for row in levels] == levels_for(min(version.effective_capacity, 64))
    assert [row["sessions"] for row in levels][:3] == [1, 8, 32]
    for row in levels:
        assert row["steps"] > 0 and row["errors"] == 0 and row["p50_ms"] <= row["p99_ms"], row
    page = client_for(alice).get(reverse("catalog:environment-detail", args=[version.environment.pk]))
    assert 'class="table load-profile"' in page.content.decode()
