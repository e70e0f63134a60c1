"""Slots after timeouts: restart a replica whose hung steps have used up the sessions a run needs on it.

When a step times out, the trainer's adapter throws its session away, but the server goes on running the hung
call and keeps that session's slot. A few hung steps fill a replica, and every later rollout on it is refused for
capacity. The adapter writes one line per lost session (the endpoint) to the run's lost_sessions.txt; the worker's
supervisor calls the keeper every few seconds, which counts them per replica since its last restart and restarts
a replica whose free slots fell below what the run holds on it, recording an event on the run.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from envs.providers import ProvisionError
from envs.providers.base import Deployment, EnvSource

log = logging.getLogger(__name__)


class SlotKeeper:
    def __init__(
        self,
        *,
        provider,
        deployment: Deployment,
        source: EnvSource,
        ledger: Path,
        needed_per_replica: int,
        say: Callable[[str], None],
        restarted: Callable[[Deployment], None] = lambda d: None,
    ) -> None:
        self.provider = provider
        self.deployment = deployment
        self.source = source
        self.ledger = ledger
        self.needed = needed_per_replica
        self.say = say
        self.restarted = restarted
        self.counted: Counter[str] = Counter()  # lost sessions already answered by a restart, per endpoint
        self.restarts = 0

    def lost(self) -> Counter[str]:
        try:
            lines = self.ledger.read_text().split()
        except FileNotFoundError:
            return Counter()
        return Counter(lines)

    def __call__(self) -> None:
        total = self.lost()
        capacity = self.deployment.capacity_per_replica
        for index, endpoint in enumerate(self.deployment.endpoints):
            lost = total[endpoint] - self.counted[endpoint]
            if lost <= 0 or capacity - lost >= self.needed:
                continue
            self.counted[endpoint] = total[endpoint]
            what = (f"replica {index}: {lost} session(s) lost to hung steps left {max(0, capacity - lost)} of its "
                    f"{capacity} slots, fewer than the {self.needed} this run holds on it")  # fmt: skip
            try:
                self.provider.restart_replica(self.deployment, index, self.source)
            except ProvisionError as exc:
                self.say(f"{what}; restarting it failed: {exc}")
                continue
            self.restarts += 1
            self.say(f"{what}: restarted it (its open sessions ended; new rollouts get all {capacity} slots)")
            self.restarted(self.deployment)
