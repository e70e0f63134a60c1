from __future__ import annotations

from django.apps import AppConfig


class WorkerCommandsConfig(AppConfig):
    """`manage.py` commands that do a worker's work in the calling process (build the tiny model, warm-start, export
    a model): they live with the workers, so the web app never imports the workers' code."""

    name = "workers.cli"
    label = "worker_commands"
