from __future__ import annotations

from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "webapp.evals"
    label = "evals"

    def ready(self) -> None:
        from webapp.core.work_queue import work_kind_register
        from webapp.evals.services import EVALUATION_WORK

        work_kind_register(EVALUATION_WORK)  # its work reaches the workers through the one door
