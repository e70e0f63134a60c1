from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from webapp.accounts.selectors import team_list_for_user

SESSION_KEY = "current_team_id"


class CurrentTeamMiddleware:
    """Sets request.team to the team picked in the header switcher (or the user's first team).

    request.team only chooses where new things go; reads are scoped to all the user's teams by the selectors.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team = None
        request.membership = None
        if request.user.is_authenticated:
            teams = list(team_list_for_user(user=request.user))
            wanted = request.session.get(SESSION_KEY)
            request.team = next((t for t in teams if t.pk == wanted), teams[0] if teams else None)
            request.user_teams = teams
            if request.team is not None:
                request.membership = request.team.memberships.filter(user=request.user).first()
        return self.get_response(request)
