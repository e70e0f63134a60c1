"""Nobody reads or changes another team's members; roles decide who may change what."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.accounts.models import Membership
from webapp.accounts.selectors import team_list_for_user, team_scope


def test_anonymous_users_are_sent_to_log_in(client, acme):
    response = client.get(reverse("team-members", args=[acme.slug]))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_alice_sees_her_team_members(client_for, alice, bob, acme):
    response = client_for(alice).get(reverse("team-members", args=[acme.slug]))
    assert response.status_code == 200
    assert b"bob" in response.content


def test_charlie_cannot_see_acme_members(client_for, alice, charlie, acme):
    response = client_for(charlie).get(reverse("team-members", args=[acme.slug]))
    assert response.status_code == 404
    assert b"alice" not in response.content


def test_charlie_cannot_add_himself_to_acme(client_for, alice, charlie, acme):
    response = client_for(charlie).post(
        reverse("team-members", args=[acme.slug]), {"username": "charlie", "role": "owner"}
    )
    assert response.status_code == 404
    assert not Membership.objects.filter(team=acme, user=charlie).exists()


def test_charlie_cannot_change_or_remove_acme_memberships(client_for, alice, bob, charlie, acme):
    bob_membership = Membership.objects.get(team=acme, user=bob)
    c = client_for(charlie)
    assert c.post(reverse("membership-role", args=[acme.slug, bob_membership.pk]), {"role": "owner"}).status_code == 404
    assert c.post(reverse("membership-remove", args=[acme.slug, bob_membership.pk])).status_code == 404
    # Nor through his own team's URL with acme's membership id.
    assert c.post(reverse("membership-role", args=["globex", bob_membership.pk]), {"role": "owner"}).status_code == 404
    bob_membership.refresh_from_db()
    assert bob_membership.role == "member"


def test_member_cannot_add_members(client_for, alice, bob, charlie, acme):
    response = client_for(bob).post(reverse("team-members", args=[acme.slug]), {"username": "charlie"})
    assert response.status_code == 403
    assert not Membership.objects.filter(team=acme, user=charlie).exists()


def test_member_cannot_promote_himself(client_for, alice, bob, acme):
    mine = Membership.objects.get(team=acme, user=bob)
    response = client_for(bob).post(reverse("membership-role", args=[acme.slug, mine.pk]), {"role": "owner"})
    assert response.status_code == 403
    mine.refresh_from_db()
    assert mine.role == "member"


def test_owner_adds_a_member_with_a_role(client_for, alice, charlie, acme):
    response = client_for(alice).post(
        reverse("team-members", args=[acme.slug]), {"username": "charlie", "role": "viewer"}
    )
    assert response.status_code == 302
    assert Membership.objects.get(team=acme, user=charlie).role == "viewer"


def test_adding_an_unknown_user_names_the_field(client_for, alice, acme):
    response = client_for(alice).post(
        reverse("team-members", args=[acme.slug]), {"username": "nobody", "role": "member"}
    )
    assert response.status_code == 400
    assert "No user called" in response.context["form"].errors["username"][0]


def test_the_last_owner_cannot_leave_or_step_down(client_for, alice, acme):
    mine = Membership.objects.get(team=acme, user=alice)
    c = client_for(alice)
    c.post(reverse("membership-role", args=[acme.slug, mine.pk]), {"role": "viewer"})
    c.post(reverse("membership-remove", args=[acme.slug, mine.pk]))
    mine.refresh_from_db()
    assert mine.role == "owner"


def test_owner_removes_a_member(client_for, alice, bob, acme):
    bob_membership = Membership.objects.get(team=acme, user=bob)
    client_for(alice).post(reverse("membership-remove", args=[acme.slug, bob_membership.pk]))
    assert not Membership.objects.filter(pk=bob_membership.pk).exists()


def test_team_switch_refuses_a_team_the_user_is_not_in(client_for, alice, charlie, globex):
    c = client_for(alice)
    assert c.post(reverse("team-switch"), {"team": globex.pk}).status_code == 404
    assert c.session.get("current_team_id") != globex.pk


def test_team_switch_picks_the_current_team(client_for, alice, acme, globex):
    Membership.objects.create(team=globex, user=alice, role="viewer")
    c = client_for(alice)
    response = c.post(reverse("team-switch"), {"team": globex.pk, "next": "/"})
    assert response.status_code == 302
    page = c.get("/runs/")
    assert page.context["current_team"] == globex


def test_team_switch_never_redirects_off_site(client_for, alice, acme):
    response = client_for(alice).post(reverse("team-switch"), {"team": acme.pk, "next": "//evil.example/"})
    assert response.url == "/"


def test_selectors_scope_to_the_users_teams(alice, charlie, acme, globex):
    assert list(team_list_for_user(user=alice)) == [acme]
    assert list(team_scope(Membership.objects.all(), user=charlie)) == list(Membership.objects.filter(team=globex))


@pytest.mark.parametrize(
    "path",
    ["/admin/", "/admin/accounts/team/", "/admin/accounts/membership/", "/admin/catalog/environment/",
     "/admin/catalog/environmentversion/", "/admin/catalog/trustreport/", "/admin/runs/run/"],
)  # fmt: skip
def test_admin_is_for_superusers_only(client_for, alice, globex, path):
    alice.is_staff = True
    alice.save()
    response = client_for(alice).get(path)
    assert response.status_code in (302, 403) or b"permission" in response.content.lower()
    assert b"Globex" not in response.content


def test_superuser_sees_teams_in_the_admin(client, acme, globex):
    from tests.factories import UserFactory

    root = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(root)
    response = client.get("/admin/accounts/team/")
    assert response.status_code == 200
    assert b"Acme" in response.content and b"Globex" in response.content
