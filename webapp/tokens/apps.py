from __future__ import annotations

from django.apps import AppConfig


class TokensConfig(AppConfig):
    name = "webapp.tokens"
    label = "tokens"
    verbose_name = "API tokens"
