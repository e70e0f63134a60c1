"""What the live sockets replay: every message a run published, in order. The live app owns it (publish.py writes
it, the consumers read it); its table kept the name it had when runs owned it."""

from __future__ import annotations

from django.db import models


class RunEvent(models.Model):
    """Every live message as it was published, in order: a page that reconnects replays from here."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    type = models.CharField(max_length=30)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_runevent"
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="one_event_per_seq")]
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"{self.seq} {self.type}"
