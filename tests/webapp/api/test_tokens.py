"""API tokens: shown once, stored hashed, acting for one user in one team, read or write, until revoked or expired."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.factories import MembershipFactory
from webapp.tokens.models import ApiToken
from webapp.tokens.services import token_authenticate, token_create, token_digest

pytestmark = pytest.mark.django_db


def test_a_token_is_stored_only_as_its_digest_and_acts_for_its_user_in_its_team(acme, alice, api):
    token, raw = token_create(user=alice, team=acme, name="laptop", scope="read")
    assert raw.startswith("ty_") and len(raw) > 40
    stored = ApiToken.objects.get(pk=token.pk)
    assert stored.digest == token_digest(raw) and raw not in {stored.digest, stored.prefix, stored.name}
    assert raw.startswith(stored.prefix)

    me = api.get("/me", raw)
    assert me.status_code == 200
    assert {k: v for k, v in me.json().items() if k != "expires_at"} == {"user": "alice", "team": "acme",
                                                                         "scope": "read"}  # fmt: skip
    assert me.json()["expires_at"].startswith(stored.expires_at.strftime("%Y-%m-%dT%H:%M:%S"))
    stored.refresh_from_db()
    assert stored.last_used_at is not None


def test_no_token_a_wrong_one_a_revoked_one_and_an_expired_one_get_401(acme, alice, api, token_for):
    raw = token_for(alice, acme)
    assert api.get("/me", None).status_code == 401
    assert api.get("/me", raw[:-1] + ("A" if raw[-1] != "A" else "B")).status_code == 401
    answer = api.get("/me", "not-a-token")
    assert answer.status_code == 401 and "Bearer" in answer.json()["detail"] and answer["WWW-Authenticate"]

    expired = token_create(user=alice, team=acme, name="old", expires_days=1)
    ApiToken.objects.filter(pk=expired[0].pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api.get("/me", expired[1]).status_code == 401

    call_command("token", "revoke", str(ApiToken.objects.get(digest=token_digest(raw)).pk), stdout=io.StringIO())
    assert api.get("/me", raw).status_code == 401


def test_a_token_stops_working_when_its_user_leaves_the_team(acme, bob, api, token_for):
    raw = token_for(bob, acme, "write")
    assert api.get("/me", raw).status_code == 200
    bob.memberships.filter(team=acme).delete()
    assert token_authenticate(raw) is None and api.get("/me", raw).status_code == 401


def test_tokens_are_refused_for_a_team_the_user_is_not_in_and_write_tokens_for_viewers(acme, globex, alice, charlie):
    with pytest.raises(ValidationError) as refused:
        token_create(user=charlie, team=acme, name="sneaky", scope="read")
    assert "team" in refused.value.message_dict
    viewer = MembershipFactory(team=globex, role="viewer").user
    with pytest.raises(ValidationError) as refused:
        token_create(user=viewer, team=globex, name="viewer", scope="write")
    assert "scope" in refused.value.message_dict
    for bad in ({"name": ""}, {"name": "x" * 101}, {"expires_days": 0}, {"expires_days": 10**6}, {"scope": "admin"}):
        with pytest.raises(ValidationError) as refused:
            token_create(**{"user": alice, "team": acme, "name": "ok", **bad})
        assert set(refused.value.message_dict) <= {"name", "expires_days", "scope"}
    assert not ApiToken.objects.exists()


def test_manage_py_token_create_prints_the_token_once_as_json(acme, globex, alice, api):
    out = io.StringIO()
    call_command("token", "create", "--user", "alice", "--team", "acme", "--scope", "write", "--expires-days", "7",
                 "--json", stdout=out)  # fmt: skip
    created = json.loads(out.getvalue())
    assert created["scope"] == "write" and created["team"] == "acme" and created["token"].startswith("ty_")
    assert api.get("/me", created["token"]).json()["scope"] == "write"
    listed = io.StringIO()
    call_command("token", "list", "--user", "alice", "--json", stdout=listed)
    assert created["token"] not in listed.getvalue() and json.loads(listed.getvalue())[0]["id"] == created["id"]
    with pytest.raises(CommandError, match="--team: there is no team"):
        call_command("token", "create", "--user", "alice", "--team", "nope")
    with pytest.raises(CommandError, match="team: You are not a member"):
        call_command("token", "create", "--user", "alice", "--team", "globex")


def test_the_tokens_page_shows_a_new_token_once_and_revokes_only_your_own(acme, alice, bob, client_for):
    client = client_for(alice)
    page = client.post("/settings/tokens/", {"name": "notebook", "team": str(acme.pk), "scope": "read",
                                             "expires_days": "30"})  # fmt: skip
    assert page.status_code == 200
    token = ApiToken.objects.get(user=alice)
    shown = page.content.decode().split("<code data-token>")[1].split("</code>")[0]
    assert token.digest == token_digest(shown)
    again = client.get("/settings/tokens/").content.decode()
    assert shown not in again and token.prefix in again

    bad = client.post("/settings/tokens/", {"name": "", "team": str(acme.pk), "scope": "read", "expires_days": "-3"})
    assert bad.status_code == 400 and ApiToken.objects.count() == 1

    assert client_for(bob).post(f"/settings/tokens/{token.pk}/revoke/").status_code == 404
    assert client_for(alice).post(f"/settings/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
