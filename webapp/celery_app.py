"""The Celery app, configured from the settings (every CELERY_* value in webapp/settings.py, beside the Redis URL it
shares with Channels): the common Django layout (https://docs.celeryq.dev/en/stable/django/first-steps-with-django.html).

The web process only ever sends tasks by name (webapp.core.work_queue); the worker process (`celery -A workers`)
imports the tasks themselves, which live in workers/worker/tasks.py."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("trainyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
