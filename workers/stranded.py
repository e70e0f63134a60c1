"""Work recorded while no worker could take it (trust checks, jobs and runs queued with the broker down, as on a first
start): queued again as soon as a worker is ready, rather than at beat's next minute. Queueing one twice is
harmless: a run or a trust report is only ever started from its queued or pending state."""

from __future__ import annotations

import logging

from celery.signals import worker_ready

log = logging.getLogger(__name__)


def stranded_requeue(*, older_than_s: float) -> dict[str, list[int]]:
    from webapp.catalog.trust import trust_checks_requeue
    from webapp.jobs.services import jobs_requeue
    from webapp.runs.services import runs_requeue

    return {
        "runs": runs_requeue(older_than_s=older_than_s),
        "trust_reports": trust_checks_requeue(older_than_s=older_than_s),
        "jobs": jobs_requeue(older_than_s=older_than_s),
    }


@worker_ready.connect
def _requeue_on_start(sender, **kwargs) -> None:
    try:
        queued = stranded_requeue(older_than_s=0)
    except Exception:
        log.warning("could not requeue stranded work at start; beat will", exc_info=True)
        return
    if any(queued.values()):
        log.info("queued stranded work: %s", queued)
