from __future__ import annotations

from django.urls import path

from webapp.artifacts import views as artifact_views
from webapp.runs.views import actions, charts, compare, data, pages

app_name = "runs"

urlpatterns = [
    path("", pages.run_list_view, name="run-list"),
    path("new/", pages.run_create_view, name="run-create"),
    path("compare/", compare.compare_view, name="compare"),
    path("compare/metrics.json", compare.compare_metrics_json, name="compare-metrics"),
    path("compare/summary.csv", compare.compare_summary_csv, name="compare-summary-csv"),
    path("compare/metrics.csv", compare.compare_metrics_csv, name="compare-metrics-csv"),
    path("charts/panels.json", charts.panels_json, name="chart-panels"),
    path("charts/layout.json", charts.chart_layout_json, name="chart-layout"),
    path("<id:pk>/", pages.run_detail_view, name="run-detail"),
    path("<id:pk>/metrics.json", data.run_metrics_json, name="run-metrics"),
    path("<id:pk>/episodes.json", data.run_episodes_json, name="run-episodes"),
    path("<id:pk>/episodes/<id:episode_id>/tokens.json", data.episode_tokens_json, name="run-episode-tokens"),
    path("<id:pk>/rewards.json", charts.run_reward_distribution_json, name="run-reward-distribution"),
    path("<id:pk>/log.txt", data.run_log_view, name="run-log"),
    path("<id:pk>/models/<str:name>.tar.gz", artifact_views.run_model_download, name="run-model-download"),
    path("<id:pk>/cancel/", actions.run_cancel_view, name="run-cancel"),
    path("<id:pk>/clone/", actions.run_clone_view, name="run-clone"),
    path("<id:pk>/resume/", actions.run_resume_view, name="run-resume"),
]
