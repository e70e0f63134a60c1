from __future__ import annotations

from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "webapp.live"
    label = "live"
