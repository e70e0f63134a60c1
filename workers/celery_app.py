from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("trainyard")
# Every CELERY_* setting lives in webapp/settings.py, next to the Redis URL it shares with Channels.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"], related_name="tasks", force=True)

# Signal handlers of a worker's start and stop: its heartbeat row, and the requeue of work stranded meanwhile.
from workers import heartbeat, standby, stranded  # noqa: E402,F401
