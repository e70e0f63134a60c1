from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from webapp.accounts import views as account_views
from webapp.api.api import api, api_not_found
from webapp.core import views as core_views
from webapp.fleet import views as fleet_views
from webapp.tokens import views as token_views

handler400 = "webapp.core.views.bad_request"
handler403 = "webapp.accounts.views.permission_denied"

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", fleet_views.healthz, name="healthz"),
    path("api/v1/", api.urls),
    path("api/v1/<path:rest>", api_not_found),
    path("settings/tokens/", token_views.tokens_view, name="tokens"),
    path("settings/tokens/<id:pk>/revoke/", token_views.token_revoke_view, name="token-revoke"),
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("teams/switch/", account_views.team_switch, name="team-switch"),
    path("teams/<slug:slug>/members/", account_views.team_members, name="team-members"),
    path(
        "teams/<slug:slug>/members/<id:membership_id>/role/",
        account_views.membership_role,
        name="membership-role",
    ),
    path(
        "teams/<slug:slug>/members/<id:membership_id>/remove/",
        account_views.membership_remove,
        name="membership-remove",
    ),
    path("envs/", include("webapp.catalog.urls")),
    path("runs/", include("webapp.runs.urls")),
    path("jobs/", include("webapp.jobs.urls")),
    path("evals/", include("webapp.evals.urls")),
    path("alerts/", include("webapp.alerts.urls")),
    path("workers/", fleet_views.workers_view, name="workers"),
    path("admin/", admin.site.urls),
]
