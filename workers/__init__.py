"""Trainyard's workers, in three rooms by the process they run in:

- `workers.worker`: the Celery worker process (`celery -A workers worker`): tasks, the life cycle of runs and
  evaluations, jobs, supervision of subprocesses, standby processes, heartbeats, the reaper. Never imports torch.
- `workers.training`: the trainer and evaluator subprocesses (`python -m workers.training.trainer RUN_ID`,
  `python -m workers.training.evaluator EVALUATION_ID`): torch, TRL and everything they record.
- `workers.models`: language models by name: resolving a model name to files, the tiny model, warm starts, export.

`celery -A workers` finds the app here; the worker imports its tasks (and their signal handlers) when it starts.
"""

from __future__ import annotations

from webapp.celery_app import app

app.conf.include = ["workers.worker.tasks"]

__all__ = ["app"]
