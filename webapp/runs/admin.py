from __future__ import annotations

from django.contrib import admin

from webapp.accounts.admin import SuperuserOnlyAdmin
from webapp.runs.models import Run


@admin.register(Run)
class RunAdmin(SuperuserOnlyAdmin):
    list_display = ["name", "team", "status", "step", "max_steps", "env_version", "model_name", "created_at"]
    list_filter = ["status", "team"]
    search_fields = ["name", "model_name"]
    readonly_fields = ["status", "step", "last_seq", "deployment", "celery_task_id", "trainer_pid", "heartbeat_at"]
