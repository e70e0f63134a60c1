from __future__ import annotations

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "webapp.jobs"
    label = "jobs"

    def ready(self) -> None:
        from webapp.core.work_queue import work_kind_register
        from webapp.jobs.services import JOB_WORK

        work_kind_register(JOB_WORK)  # its work reaches the workers through the one door
