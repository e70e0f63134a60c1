from __future__ import annotations

from django.urls import path

from webapp.evals import views

app_name = "evals"

urlpatterns = [
    path("", views.evaluation_list_view, name="eval-list"),
    path("new/", views.evaluation_create_view, name="eval-create"),
    path("compare/", views.evaluation_compare_view, name="eval-compare"),
    path("leaderboard/<id:version_id>/", views.leaderboard_view, name="leaderboard"),
    path("<id:pk>/", views.evaluation_detail_view, name="eval-detail"),
    path("<id:pk>/summary.json", views.evaluation_summary_json, name="eval-summary"),
    path("<id:pk>/episodes/<id:episode_id>/", views.evaluation_episode_view, name="eval-episode"),
    path("<id:pk>/cancel/", views.evaluation_cancel_view, name="eval-cancel"),
]
