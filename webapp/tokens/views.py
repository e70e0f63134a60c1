"""The API tokens page: a user's tokens, a new one (its text shown once), revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts.selectors import team_list_for_user
from webapp.tokens.forms import TokenCreateForm
from webapp.tokens.selectors import token_list
from webapp.tokens.services import token_create, token_revoke


@login_required
def tokens_view(request: HttpRequest) -> HttpResponse:
    teams = list(team_list_for_user(user=request.user))
    form = TokenCreateForm(request.POST or None, teams=teams)
    created = None
    if request.method == "POST" and form.is_valid():
        team = next(t for t in teams if str(t.pk) == form.cleaned_data["team"])
        try:
            _token, created = token_create(user=request.user, team=team, name=form.cleaned_data["name"],
                                          scope=form.cleaned_data["scope"],
                                          expires_days=form.cleaned_data["expires_days"])  # fmt: skip
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            form = TokenCreateForm(teams=teams)
    context = {"tokens": token_list(user=request.user), "form": form, "created": created}
    return render(request, "tokens/tokens.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(token_list(user=request.user), pk=pk)  # another user's token: 404
    token_revoke(token=token, user=request.user)
    messages.success(request, f"Revoked {token.name}.")
    return redirect("tokens")
