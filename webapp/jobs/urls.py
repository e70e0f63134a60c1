from __future__ import annotations

from django.urls import path

from webapp.jobs import views

app_name = "jobs"
urlpatterns = [
    path("<id:pk>/", views.job_detail, name="job-detail"),
    path("<id:pk>/job.json", views.job_json, name="job-json"),
]
