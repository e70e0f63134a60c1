"""The one life cycle of work that holds environment servers and a subprocess on a worker — a run and an evaluation:

    claim (queued → provisioning, once) → provision (each version's servers, contract-checked)
    → start (provisioning → running, unless cancelled meanwhile) → supervise the subprocess to its end
    → tear every server down → record how it ended.

A task delivered twice executes once (only a queued record is claimed); the servers are torn down before the final
status is written, so finished work never leaves a server behind; any error of the worker itself fails the work with
its reason. While it provisions, the worker beats for the work (its `heartbeat_at`), so slow provisioning on a busy
machine is never mistaken for a lost worker; once the subprocess runs, liveness is each kind's own (a run's trainer
beats, an evaluation's supervision loop beats). What differs between a run and an evaluation is the `Execution`
each brings (workers/worker/runs.py, workers/worker/evaluations.py).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import close_old_connections, connection

from webapp.live.publish import close_layer
from workers.worker.host_identity import process_identity
from workers.worker.provisioning import Providers, deployments_teardown
from workers.worker.supervision import Outcome, SupervisedProcess

log = logging.getLogger(__name__)

SUCCEEDED, FAILED, CANCELLED = "succeeded", "failed", "cancelled"


class Execution(ABC):
    """One piece of work as the life cycle sees it."""

    def __init__(self, pk: int) -> None:
        self.pk = pk
        self.providers = Providers()
        self.deployments: list = []

    @property
    @abstractmethod
    def what(self) -> str:
        """How the log names it: "run 12", "evaluation 3"."""

    @abstractmethod
    def claim(self, worker: str) -> bool:
        """queued → provisioning, recording the worker (`HOST#NS:PID`); False when it is not queued (gone, cancelled,
        or taken by a copy of this task)."""

    @abstractmethod
    def status(self) -> str:
        """Its status now ("gone" when the record no longer exists)."""

    @abstractmethod
    def beat(self) -> None:
        """Its heartbeat, written by the worker while it provisions."""

    @abstractmethod
    def provision(self) -> str:
        """Start every environment it needs into `self.deployments` and record them; "" or why it fails."""

    @abstractmethod
    def start(self) -> bool:
        """provisioning → running; False when it was cancelled while its servers started."""

    @abstractmethod
    def spawn(self) -> SupervisedProcess:
        """Its subprocess (a trainer, an evaluator), recorded so that the reaper can kill it."""

    @abstractmethod
    def supervise(self, process: SupervisedProcess) -> Outcome:
        """Watch the subprocess to its end (cancel, heartbeat, dead servers)."""

    @abstractmethod
    def verdict(self, outcome: Outcome, process: SupervisedProcess) -> tuple[str, str]:
        """(final status, reason) from how the subprocess ended."""

    def publish(self) -> None:  # noqa: B027 (a hook: work that writes no files has nothing to publish)
        """Copy what its subprocess wrote so far (its log) to the artifact store; called every few seconds while
        the subprocess runs and once after it ends."""

    def torn_down(self) -> None:  # noqa: B027 (a hook: most work has nothing to note)
        """Called once its servers are gone."""

    @abstractmethod
    def finish(self, final: str, reason: str) -> str:
        """Record the final status (illegal moves — it ended meanwhile — are not errors); returns the status."""


def execute(execution: Execution) -> str:
    """Drive `execution` through the life cycle; returns its final status."""
    if not execution.claim(process_identity()):
        status = execution.status()
        log.info("%s is %s, not queued: not starting it again", execution.what, status)
        return status
    try:
        final, reason = _provision_and_supervise(execution)
    except Exception as exc:
        log.exception("%s failed in the worker", execution.what)
        final, reason = FAILED, f"worker error: {type(exc).__name__}: {exc}"
    finally:
        deployments_teardown(execution.deployments, execution.providers, what=execution.what)
        if execution.deployments:
            execution.torn_down()
    try:
        return execution.finish(final, reason)
    finally:
        close_layer()


def _provision_and_supervise(execution: Execution) -> tuple[str, str]:
    with beating(execution):
        failure = execution.provision()
    if failure:
        return FAILED, failure
    if not execution.start():
        return CANCELLED, ""
    process = execution.spawn()
    with publishing(execution):
        outcome = execution.supervise(process)
    return execution.verdict(outcome, process)


@contextmanager
def publishing(execution: Execution) -> Iterator[None]:
    """`execution.publish()` every TRAINYARD_PUBLISH_SECONDS while the body runs, and once after: the store (and so
    every page, on every host) follows the subprocess's log within seconds, and has all of it at the end."""
    stop = threading.Event()

    def publish() -> None:
        try:
            execution.publish()
        except Exception:  # an unreachable store must not stop the work; the last publish says it again
            log.warning("could not publish the files of %s to the artifact store", execution.what, exc_info=True)

    def loop() -> None:
        while not stop.wait(settings.TRAINYARD_PUBLISH_SECONDS):
            publish()

    thread = threading.Thread(target=loop, daemon=True, name=f"publish-{execution.what}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
        publish()


@contextmanager
def beating(execution: Execution) -> Iterator[None]:
    """The worker beats for `execution` every TRAINYARD_WORKER_BEAT seconds while the body runs."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.TRAINYARD_WORKER_BEAT):
                try:
                    close_old_connections()
                    execution.beat()
                except Exception:
                    log.warning("could not record the heartbeat of %s", execution.what, exc_info=True)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, daemon=True, name=f"beat-{execution.what}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
