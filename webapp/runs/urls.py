from __future__ import annotations

from django.urls import path

from webapp.runs import views

app_name = "runs"

urlpatterns = [
    path("", views.run_list_view, name="run-list"),
    path("new/", views.run_create_view, name="run-create"),
    path("compare/", views.compare_view, name="compare"),
    path("compare/metrics.json", views.compare_metrics_json, name="compare-metrics"),
    path("compare/summary.csv", views.compare_summary_csv, name="compare-summary-csv"),
    path("compare/metrics.csv", views.compare_metrics_csv, name="compare-metrics-csv"),
    path("<id:pk>/", views.run_detail_view, name="run-detail"),
    path("<id:pk>/metrics.json", views.run_metrics_json, name="run-metrics"),
    path("<id:pk>/episodes.json", views.run_episodes_json, name="run-episodes"),
    path("<id:pk>/log.txt", views.run_log_view, name="run-log"),
    path("<id:pk>/models/<str:name>.tar.gz", views.run_model_download, name="run-model-download"),
    path("<id:pk>/cancel/", views.run_cancel_view, name="run-cancel"),
    path("<id:pk>/clone/", views.run_clone_view, name="run-clone"),
    path("<id:pk>/resume/", views.run_resume_view, name="run-resume"),
]
