from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts import services
from webapp.accounts.forms import MembershipAddForm, MembershipRoleForm
from webapp.accounts.middleware import SESSION_KEY
from webapp.accounts.models import Membership, Role, Team
from webapp.accounts.selectors import member_list, membership_require, team_list_for_user


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    team = get_object_or_404(team_list_for_user(user=request.user), pk=request.POST.get("team"))
    request.session[SESSION_KEY] = team.pk
    next_url = request.POST.get("next") or "/"
    return redirect(next_url if next_url.startswith("/") and not next_url.startswith("//") else "/")


@login_required
def team_members(request: HttpRequest, slug: str) -> HttpResponse:
    team = get_object_or_404(team_list_for_user(user=request.user), slug=slug)
    me = membership_require(user=request.user, team=team)
    form = MembershipAddForm()
    if request.method == "POST":
        membership_require(user=request.user, team=team, role=Role.OWNER)
        form = MembershipAddForm(request.POST)
        if form.is_valid():
            try:
                services.membership_add(team=team, **form.cleaned_data)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    for error in errors:
                        form.add_error(field, error)
            else:
                messages.success(request, f"Added {form.cleaned_data['username']}.")
                return redirect("team-members", slug=team.slug)
    return render(
        request,
        "accounts/team_members.html",
        {"team": team, "me": me, "members": member_list(team=team), "form": form, "roles": Role.choices},
        status=400 if form.errors else 200,
    )


def _owned_membership(request: HttpRequest, slug: str, membership_id: int) -> Membership:
    team: Team = get_object_or_404(team_list_for_user(user=request.user), slug=slug)
    membership_require(user=request.user, team=team, role=Role.OWNER)
    return get_object_or_404(Membership, pk=membership_id, team=team)


@login_required
@require_POST
def membership_role(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    membership = _owned_membership(request, slug, membership_id)
    form = MembershipRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Pick a valid role.")
    else:
        try:
            services.membership_set_role(membership=membership, role=form.cleaned_data["role"])
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
    return redirect("team-members", slug=slug)


@login_required
@require_POST
def membership_remove(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    membership = _owned_membership(request, slug, membership_id)
    try:
        services.membership_remove(membership=membership)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("team-members", slug=slug)


def permission_denied(request: HttpRequest, exception: PermissionDenied | None = None) -> HttpResponse:
    return render(request, "403.html", {"reason": str(exception or "")}, status=403)
