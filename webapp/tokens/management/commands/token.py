"""`manage.py token create --user NAME --team SLUG --scope read|write [--expires-days N] [--name NAME] --json`
(prints the new token once), `token list --user NAME [--json]` and `token revoke ID`."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from webapp.accounts.models import Team
from webapp.core.cli_errors import validation_text
from webapp.tokens.models import ApiToken, Scope
from webapp.tokens.selectors import token_list
from webapp.tokens.services import token_create, token_revoke


def token_dict(token: ApiToken) -> dict:
    return {
        "id": token.pk, "name": token.name, "prefix": token.prefix, "user": token.user.get_username(),
        "team": token.team.slug, "scope": token.scope, "active": token.is_active,
        "created_at": token.created_at.isoformat(),
        "expires_at": token.expires_at.isoformat() if token.expires_at else None,
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
        "revoked_at": token.revoked_at.isoformat() if token.revoked_at else None,
    }  # fmt: skip


class Command(BaseCommand):
    help = "Create, list and revoke API tokens."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="a new token, printed once")
        create.add_argument("--user", required=True)
        create.add_argument("--team", required=True, help="team slug: the token acts within it only")
        create.add_argument("--scope", choices=Scope.values, default=Scope.READ)
        create.add_argument("--expires-days", type=int, default=90, help="0: never")
        create.add_argument("--name", default="")
        create.add_argument("--json", action="store_true")
        listing = sub.add_parser("list", help="a user's tokens (never their text)")
        listing.add_argument("--user", required=True)
        listing.add_argument("--json", action="store_true")
        revoke = sub.add_parser("revoke", help="revoke a token by its id")
        revoke.add_argument("token_id", type=int)

    def handle(self, *args, **options) -> None:
        if options["action"] == "revoke":
            token = ApiToken.objects.filter(pk=options["token_id"]).select_related("user", "team").first()
            if token is None:
                raise CommandError(f"there is no token {options['token_id']}")
            token_revoke(token=token, user=token.user)
            self.stdout.write(json.dumps(token_dict(token)))
            return
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"--user: there is no user {options['user']!r}")
        if options["action"] == "list":
            rows = [token_dict(t) for t in token_list(user=user)]
            self.stdout.write(json.dumps(rows, indent=2) if options["json"] else
                              "\n".join(f"{r['id']}\t{r['prefix']}…\t{r['team']}\t{r['scope']}\t{r['name']}"
                                        for r in rows))  # fmt: skip
            return
        team = Team.objects.filter(slug=options["team"]).first()
        if team is None:
            raise CommandError(f"--team: there is no team {options['team']!r}")
        expires = options["expires_days"] or None
        try:
            token, raw = token_create(user=user, team=team, name=options["name"] or f"{user.get_username()} (CLI)",
                                      scope=options["scope"], expires_days=expires)  # fmt: skip
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps({**token_dict(token), "token": raw}, indent=2))
        else:
            self.stdout.write(raw)
