from __future__ import annotations

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "webapp.runs"
    label = "runs"

    def ready(self) -> None:
        from webapp.core.work_queue import work_kind_register
        from webapp.runs.services import RUN_WORK

        work_kind_register(RUN_WORK)  # its work reaches the workers through the one door
