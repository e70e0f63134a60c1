from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from webapp.fleet.models import Worker


def workers_alive() -> QuerySet[Worker]:
    """Workers whose last heartbeat is recent (within TRAINYARD_WORKER_LOST_AFTER)."""
    cutoff = timezone.now() - timedelta(seconds=settings.TRAINYARD_WORKER_LOST_AFTER)
    return Worker.objects.filter(seen_at__gte=cutoff)


def host_has_live_worker(host: str) -> bool:
    return workers_alive().filter(host=host).exists()
