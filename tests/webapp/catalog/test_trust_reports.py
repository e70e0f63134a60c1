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
