from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo: its team and user, the built-in environments (bootstrap), and its live run (`manage.py demo_run`)."""

    name = "webapp.demo"
    label = "demo"
