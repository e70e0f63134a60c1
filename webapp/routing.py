from __future__ import annotations

from django.urls import path

from webapp.runs.consumers import RunConsumer, RunsListConsumer

websocket_urlpatterns = [
    path("ws/runs/<id:run_id>/", RunConsumer.as_asgi()),
    path("ws/runs/", RunsListConsumer.as_asgi()),
]
