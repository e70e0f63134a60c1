from __future__ import annotations

from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "webapp.catalog"
    label = "catalog"

    def ready(self) -> None:
        from webapp.catalog.trust import TRUST_CHECK_WORK
        from webapp.core.work_queue import work_kind_register

        work_kind_register(TRUST_CHECK_WORK)  # its work reaches the workers through the one door
