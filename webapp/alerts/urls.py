from __future__ import annotations

from django.urls import path

from webapp.alerts import views

app_name = "alerts"

urlpatterns = [
    path("", views.alerts_view, name="alerts"),
    path("runs/<id:pk>/", views.run_alerts_fragment, name="run-alerts"),
    path("runs/<id:pk>/mute/", views.run_mute_view, name="run-mute"),
]
