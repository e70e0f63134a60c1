"""The workers Trainyard knows, from the heartbeats they record: what /healthz, the reaper and a Workers page read
instead of asking the broker (a live broadcast takes a second and says nothing about a worker that died)."""

from __future__ import annotations

from django.db import models


class Worker(models.Model):
    name = models.CharField(max_length=200, unique=True, help_text="Celery's node name, e.g. gpu-0@host")
    host = models.CharField(max_length=200, db_index=True)
    pid = models.IntegerField()
    queues = models.JSONField(default=list)
    gpus = models.JSONField(default=list, help_text="GPU indices it offers (empty on a CPU worker)")
    capabilities = models.JSONField(
        default=dict, blank=True, help_text="What it can run: cuda, cuda_devices, vllm, peft (workers.capabilities)"
    )
    current_runs = models.JSONField(default=list, help_text="Ids of the runs it executes now")
    deployment = models.JSONField(
        default=dict, blank=True,
        help_text="What its host agrees on with the web (store URL, secret fingerprint), the store's reachability "
                  "from there and its cache's size (webapp.fleet.deployment)",
    )  # fmt: skip
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
