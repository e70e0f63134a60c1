"""The API works within the token's team only: another team's ids are 404, a read token cannot write, and every
answer is JSON that names what was wrong."""

from __future__ import annotations

import pytest

from webapp.runs.models import Run, Status
from webapp.runs.services import run_create, run_fail
from webapp.tokens.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_run(acme, alice, guess_version):
    return run_create(team=acme, user=alice, env_version=guess_version, start=False, config={"max_steps": 3})


def test_alice_lists_and_reads_her_team_s_runs_and_charlie_sees_none_of_them(acme_run, acme, globex, alice, charlie,
                                                                            api, token_for):  # fmt: skip
    alice_token, charlie_token = token_for(alice, acme), token_for(charlie, globex)
    listed = api.get("/runs", alice_token).json()
    assert listed["count"] == 1 and listed["items"][0]["id"] == acme_run.pk
    assert listed["items"][0]["environment"] == "guess-number" and listed["items"][0]["status"] == "queued"
    assert api.get("/runs", charlie_token).json() == {"count": 0, "limit": 50, "offset": 0, "items": []}
    for path in (f"/runs/{acme_run.pk}", f"/runs/{acme_run.pk}/metrics", f"/runs/{acme_run.pk}/episodes",
                 f"/runs/{acme_run.pk}/models"):  # fmt: skip
        assert api.get(path, alice_token).status_code == 200, path
        answer = api.get(path, charlie_token)
        assert answer.status_code == 404 and answer.json()["detail"], path
    for path in (f"/runs/{acme_run.pk}/cancel", f"/runs/{acme_run.pk}/resume", f"/runs/{acme_run.pk}/clone"):
        assert api.post(path, token_for(charlie, globex, "write")).status_code == 404, path
    assert Run.objects.count() == 1


def test_a_token_of_another_team_of_the_same_user_sees_only_that_team(acme_run, acme, globex, alice, api, token_for):
    from webapp.accounts.models import Membership

    Membership.objects.create(team=globex, user=alice, role="member")
    globex_token = token_for(alice, globex)
    assert api.get("/runs", globex_token).json()["count"] == 0  # alice's acme run is not globex's
    assert api.get(f"/runs/{acme_run.pk}", globex_token).status_code == 404


def test_a_read_token_cannot_write_and_a_write_token_can(acme_run, acme, alice, api, token_for):
    read, write = token_for(alice, acme, "read"), token_for(alice, acme, "write")
    body = {"env": "guess-number", "max_steps": 2}
    refused = api.post("/runs", read, body)
    assert refused.status_code == 403 and "write scope" in refused.json()["detail"]
    assert api.post(f"/runs/{acme_run.pk}/cancel", read).status_code == 403
    assert Run.objects.count() == 1 and Run.objects.get().status == Status.QUEUED

    created = api.post("/runs", write, body)
    assert created.status_code == 201, created.json()
    assert created.json()["max_steps"] == 2 and Run.objects.count() == 2
    cancelled = api.post(f"/runs/{acme_run.pk}/cancel", write)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


def test_a_viewer_s_write_token_stops_writing_when_the_role_drops(acme_run, acme, bob, api, token_for):
    write = token_for(bob, acme, "write")
    bob.memberships.filter(team=acme).update(role="viewer")
    assert api.post(f"/runs/{acme_run.pk}/cancel", write).status_code == 403


def test_bad_input_is_a_422_that_names_the_field_and_saves_nothing(acme_run, acme, alice, api, token_for):
    write = token_for(alice, acme, "write")
    cases = {
        "max_steps": {"env": "guess-number", "max_steps": 0},
        "env": {"env": "no-such-env"},
        "env_version": {"env": "guess-number", "env_version": "9.9.9"},
        "num_generations": {"env": "guess-number", "config": {"num_generations": 10**9}},  # a field of config
        "provider": {"env": "guess-number", "provider": "kubernetes"},
    }
    for field, body in cases.items():
        answer = api.post("/runs", write, body)
        assert answer.status_code == 422, (field, answer.content)
        assert any(field in key for key in answer.json()["errors"]) or field in answer.json()["detail"], answer.json()
    assert Run.objects.count() == 1
    assert api.get("/runs", write, limit=0).status_code == 422
    assert api.get("/runs", write, limit=501).status_code == 422
    assert api.get("/runs", write, status="nonsense").status_code == 422
    nul = api.get("/runs", write, search="a\x00b")
    assert nul.status_code == 422 and "search" in nul.json()["errors"], nul.json()
    nul = api.post("/runs", write, {"env": "guess-number", "config": {"advanced": "x\x00"}})
    assert nul.status_code == 422 and "config" in nul.json()["errors"], nul.json()


def test_resume_of_a_running_run_is_a_409_and_of_a_failed_one_queues_it(acme_run, acme, alice, api, token_for):
    write = token_for(alice, acme, "write")
    assert api.post(f"/runs/{acme_run.pk}/resume", write).status_code == 409
    run_fail(acme_run, "worker lost")
    resumed = api.post(f"/runs/{acme_run.pk}/resume", write, {"checkpoint": "checkpoint-7"})
    assert resumed.status_code == 422 and "checkpoint" in resumed.json()["errors"]
    resumed = api.post(f"/runs/{acme_run.pk}/resume", write)
    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"


def test_environments_and_evaluations_are_the_team_s_and_shared_ones(acme_run, acme, globex, alice, charlie, api,
                                                                    token_for):  # fmt: skip
    listed = api.get("/environments", token_for(alice, acme)).json()
    assert [e["slug"] for e in listed["items"]] == ["guess-number"] and listed["items"][0]["versions"]
    environment_id = listed["items"][0]["id"]
    assert api.get(f"/environments/{environment_id}", token_for(charlie, globex)).status_code == 404
    assert api.get("/evaluations", token_for(charlie, globex)).json()["count"] == 0
    assert api.get("/evaluations/1", token_for(charlie, globex)).status_code == 404


def test_the_openapi_document_is_served_and_lists_the_bearer_scheme(client):
    document = client.get("/api/v1/openapi.json").json()
    assert document["info"]["title"] == "Trainyard API"
    assert {"/api/v1/runs", "/api/v1/runs/{run_id}", "/api/v1/environments", "/api/v1/me"} <= set(document["paths"])
    assert any(s.get("scheme") == "bearer" for s in document["components"]["securitySchemes"].values())
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200 and b"/static/ninja/swagger-ui-bundle.js" in docs.content
    assert b"cdn." not in docs.content and b"unpkg" not in docs.content  # served here: no CDN at run time


def test_revoking_a_token_takes_effect_at_once(acme, alice, api, token_for):
    raw = token_for(alice, acme)
    assert api.get("/runs", raw).status_code == 200
    ApiToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    assert api.get("/runs", raw).status_code == 401


def test_evaluations_through_the_api_are_the_team_s(acme, globex, alice, charlie, guess_version, api, token_for):
    write = token_for(alice, acme, "write")
    created = api.post("/evaluations", write, {"model": "tiny-local", "environments": ["guess-number"], "episodes": 4})
    assert created.status_code == 201, created.content
    evaluation = created.json()
    assert evaluation["status"] == "queued" and evaluation["episodes_total"] == 4
    assert api.get(f"/evaluations/{evaluation['id']}", token_for(charlie, globex)).status_code == 404
    compare = api.get("/evaluations/compare", write, ids=f"{evaluation['id']}")
    assert compare.status_code == 200
    assert api.get("/evaluations/compare", token_for(charlie, globex), ids=f"{evaluation['id']}").status_code == 404
    assert api.get("/evaluations/compare", write, ids="1;drop").status_code == 422
    refused = api.post("/evaluations", write, {"model": "tiny-local", "environments": ["nope"]})
    assert refused.status_code == 422 and "environments" in refused.json()["errors"]
    assert api.post(f"/evaluations/{evaluation['id']}/cancel", write).json()["status"] == "cancelled"
    assert api.get(f"/leaderboard/{guess_version.pk}", write).json() == []  # nothing finished yet
    assert api.get(f"/leaderboard/{guess_version.pk}", token_for(charlie, globex)).status_code == 404
    trust = api.get(f"/environments/{guess_version.environment_id}/versions/{guess_version.pk}/trust", write)
    assert trust.status_code == 200 and isinstance(trust.json(), list)
    assert api.get(f"/environments/{guess_version.environment_id}/versions/{guess_version.pk}/trust",
                   token_for(charlie, globex)).status_code == 404  # fmt: skip


def test_a_version_s_settings_change_until_a_run_uses_it(acme, globex, alice, charlie, guess_version, api, token_for):
    write = token_for(alice, acme, "write")
    path = f"/environments/{guess_version.environment_id}/versions/{guess_version.pk}/settings"
    changed = api.client_put(path, write, {"settings": {"env": {"GUESS_LEVEL": "hard"}}})
    assert changed.status_code == 200, changed.content
    assert changed.json()["versions"][0]["settings"]["env"] == {"GUESS_LEVEL": "hard"}
    refused = api.client_put(path, write, {"settings": {"nonsense": 1}})
    assert refused.status_code == 422 and "settings" in refused.json()["errors"]
    assert api.client_put(path, token_for(charlie, globex, "write"), {"settings": {}}).status_code == 404
    assert api.client_put(path, token_for(alice, acme), {"settings": {}}).status_code == 403
    from webapp.catalog.services import version_mark_used

    version_mark_used(version=guess_version)
    frozen = api.client_put(path, write, {"settings": {}})
    assert frozen.status_code == 422 and "frozen" in frozen.json()["detail"]


def test_what_django_refuses_before_the_api_is_still_a_json_answer(acme, alice, token_for, client):
    bad_host = client.get("/api/v1/me", HTTP_HOST="S", HTTP_AUTHORIZATION=f"Bearer {token_for(alice, acme)}")
    assert bad_host.status_code == 400 and bad_host["Content-Type"] == "application/json" and bad_host.json()["detail"]
    assert client.get("/api/v1/no/such/thing").json()["detail"].startswith("No API endpoint")
