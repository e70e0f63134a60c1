from __future__ import annotations

from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command

from webapp.accounts.models import Membership, Team


def test_bootstrap_is_idempotent_and_prints_the_login(db):
    out = StringIO()
    call_command("bootstrap", "--skip-model", stdout=out)
    call_command("bootstrap", "--skip-model", stdout=out)
    assert get_user_model().objects.filter(username="demo").count() == 1
    assert Team.objects.filter(slug="demo").count() == 1
    assert Membership.objects.get(user__username="demo").role == "owner"
    assert "Demo login: user 'demo'" in out.getvalue()
    assert get_user_model().objects.get(username="demo").check_password("trainyard-demo")
