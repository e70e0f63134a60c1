"""Teams see their own environments and shared ones; nobody else's."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.catalog.models import Environment


def test_the_list_shows_own_and_shared_environments_only(client_for, alice, acme_env, globex_env, shared_env):
    response = client_for(alice).get(reverse("catalog:environment-list"))
    names = [env.name for env in response.context["page"]]
    assert names == ["Acme secret game", "Shared words"]


def test_charlie_cannot_open_acme_environment(client_for, charlie, acme_env):
    assert client_for(charlie).get(reverse("catalog:environment-detail", args=[acme_env.pk])).status_code == 404


def test_charlie_cannot_add_a_version_to_acme_environment(client_for, charlie, acme_env):
    response = client_for(charlie).post(
        reverse("catalog:version-create", args=[acme_env.pk]),
        {"source_kind": "builtin", "source_ref": "guess-number", "label": "2.0", "capacity": 8},
    )
    assert response.status_code == 404
    assert acme_env.versions.count() == 1


def test_charlie_cannot_test_drive_acme_versions(client_for, charlie, acme_env):
    version = acme_env.versions.get()
    url = reverse("catalog:version-testdrive", args=[acme_env.pk, version.pk])
    assert client_for(charlie).get(url).status_code == 404
    assert client_for(charlie).post(url, {"number": 3}).status_code == 404


def test_alice_cannot_add_versions_to_a_shared_environment_of_another_team(client_for, alice, shared_env):
    response = client_for(alice).post(
        reverse("catalog:version-create", args=[shared_env.pk]),
        {"source_kind": "builtin", "source_ref": "word-guess", "label": "2.0", "capacity": 8},
    )
    assert response.status_code == 403


def test_a_viewer_cannot_add_environments(client_for, bob, acme):
    bob.memberships.update(role="viewer")
    response = client_for(bob).post(
        reverse("catalog:environment-create"),
        {"name": "x", "source_kind": "builtin", "source_ref": "guess-number", "label": "1", "capacity": 4,
         "visibility": "team"},
    )  # fmt: skip
    assert response.status_code == 403
    assert not Environment.objects.filter(name="x").exists()


def test_search_and_tag_filter(client_for, alice, acme_env, shared_env):
    c = client_for(alice)
    assert [e.slug for e in c.get("/envs/?q=secret").context["page"]] == ["acme-game"]
    assert [e.slug for e in c.get("/envs/?tag=words").context["page"]] == ["shared-words"]


def test_the_detail_page_lists_tools_and_their_arguments(client_for, alice, acme_env):
    response = client_for(alice).get(reverse("catalog:environment-detail", args=[acme_env.pk]))
    assert b"<code>guess</code>" in response.content
    assert b"<code>number</code>" in response.content and b"Your guess" in response.content


@pytest.mark.parametrize("role", ["owner", "member", "viewer"])
def test_every_member_can_read(client_for, alice, acme_env, role):
    alice.memberships.update(role=role)
    assert client_for(alice).get(reverse("catalog:environment-detail", args=[acme_env.pk])).status_code == 200


def test_a_used_version_is_frozen(acme_env):
    from django.core.exceptions import ValidationError

    from webapp.catalog.services import version_mark_used

    version = acme_env.versions.get()
    version_mark_used(version=version)
    version.source_ref = "word-guess"
    with pytest.raises(ValidationError, match="used by a run"):
        version.save()


def test_the_version_shows_the_accepted_calls_of_its_last_runs(client_for, alice, charlie, acme, acme_env):
    from webapp.runs.services import run_create

    version = acme_env.versions.get()
    counts = [(8, 14, 2), (8, 2, 14), (0, 0, 0)]  # episodes, accepted calls, refused calls; the last never played
    for episodes, accepted, refused in counts:
        run = run_create(team=acme, user=alice, env_version=version, start=False)
        type(run).objects.filter(pk=run.pk).update(episodes_recorded=episodes, env_tool_calls=accepted,
                                                   env_tool_errors=refused)  # fmt: skip
    page = client_for(alice).get(reverse("catalog:environment-detail", args=[acme_env.pk])).content.decode()
    # (14 + 2) accepted calls over 16 episodes; 16 of the 32 calls sent were refused.
    assert "<strong>1.00</strong> accepted calls per episode over its last 2 runs" in page
    assert "the environment refused 50 % of the calls sent" in page
    assert "0.25 accepted calls per episode, 88 % refused" in page  # the run that learned refused calls
    assert client_for(charlie).get(reverse("catalog:environment-detail", args=[acme_env.pk])).status_code == 404
