from __future__ import annotations

from django.http import HttpRequest


def teams(request: HttpRequest) -> dict:
    return {
        "current_team": getattr(request, "team", None),
        "current_membership": getattr(request, "membership", None),
        "user_teams": getattr(request, "user_teams", []),
    }
