from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "webapp.core"
    label = "core"

    def ready(self) -> None:
        from django.urls import register_converter

        from webapp.core.url_ids import IdConverter

        # `<id:pk>` in every URL and WebSocket route; registered before any URLconf compiles its patterns.
        register_converter(IdConverter, "id")
