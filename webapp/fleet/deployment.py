"""What every host of one deployment must agree on — the secret key (sessions, signed tokens) and the artifact store
— and what a worker's host reports about itself: whether the store answers from there, and how big its cache is.

A worker records its report with each heartbeat (webapp.fleet.models.Worker.deployment); the Workers page compares
each host's with the web's own (`deployment_differences`), and a worker says so in its log at start. The secret is
never sent, only a fingerprint of it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from django.conf import settings


def deployment_settings() -> dict[str, str]:
    """This process's view of what all hosts share."""
    secret = hashlib.sha256(f"trainyard-deployment:{settings.SECRET_KEY}".encode()).hexdigest()[:12]
    return {"store": settings.ARTIFACTS_URL, "secret": secret}


def folder_bytes(folder: Path) -> int:
    """Bytes under a folder (links not followed; what vanishes meanwhile is skipped)."""
    total, pending = 0, [str(folder)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def deployment_report(*, with_cache_size: bool = True) -> dict:
    """A host's report: the shared settings as it sees them, the store's reachability from it, its cache."""
    from webapp.artifacts.store import artifact_store

    try:
        problem = artifact_store().check()
    except Exception as exc:  # a store URL that cannot even be opened (no bucket named, a bad scheme)
        problem = f"{type(exc).__name__}: {exc}"[:500]
    report = {**deployment_settings(), "store_problem": problem, "cache_dir": str(settings.CACHE_DIR)}
    if with_cache_size:
        report["cache_bytes"] = folder_bytes(Path(settings.CACHE_DIR))
    return report


def deployment_differences(report: dict, reference: dict | None = None, *, theirs: str = "the web's") -> list[str]:
    """What a host's report says against the reference (by default the web's own settings): sentences for the page
    and the log."""
    reference = reference or deployment_settings()
    found = []
    if report.get("store") and reference.get("store") and report["store"] != reference["store"]:
        found.append(f"its artifact store is {report['store']}, {theirs} is {reference['store']}: set the same "
                     f"TRAINYARD_ARTIFACTS on every host")  # fmt: skip
    if report.get("secret") and reference.get("secret") and report["secret"] != reference["secret"]:
        found.append(f"its DJANGO_SECRET_KEY differs from {theirs}: set the same one on every host")
    if report.get("store_problem"):
        found.append(f"it cannot use the artifact store: {report['store_problem']}")
    return found
