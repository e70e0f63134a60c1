"""OpenEnv's own validator (`openenv validate`, in the openenv package we install), run beside our probes.

Two modes, as the CLI has them. Local mode reads a package folder whose openenv.yaml has a `validation:` block
(the declared reward contract, resources, verifier, tags) and runs the package checks; it is run without building
an image (`skip_build`): the build-dependent checks say they were skipped, and the deployed server is what our
probes and URL mode exercise. URL mode checks a running server's HTTP surface (/health, /metadata, /schema, /mcp,
the endpoint set). Both run in-process: the CLI spends five seconds importing itself, each time.

Each mode's outcome is kept as OpenEnv reports it (its JSON, versioned) plus the checks in one shape for display:
`{"id", "status": pass|fail|warn|skip|error, "evidence"}`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)


def has_validation_block(folder: Path) -> bool:
    try:
        manifest = yaml.safe_load((folder / "openenv.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(manifest, dict) and isinstance(manifest.get("validation"), dict)


def validate_package(folder: Path) -> dict[str, Any]:
    """Local mode, every level up to semantic, no image build."""
    from openenv.validation.runner import run_validation
    from openenv.validation.types import Level

    try:
        report = run_validation(folder, max_level=Level.SEMANTIC, skip_build=True).model_dump(mode="json")
    except Exception as exc:  # the validator failing is an outcome to show, not our crash
        log.warning("openenv validate %s failed: %s", folder, exc)
        return {"mode": "local", "verdict": "error", "checks": [], "error": f"{type(exc).__name__}: {exc}"[:500]}
    checks = [{"id": r["check_id"], "status": r["status"], "evidence": (r.get("evidence") or [""])[0][:300]}
              for r in report.get("results", [])]  # fmt: skip
    return {"mode": "local", "verdict": report.get("verdict", "error"), "checks": checks, "report": report}


def validate_url(endpoint: str, *, timeout: float = 5.0) -> dict[str, Any]:
    """URL mode: the running server's HTTP surface."""
    try:
        from openenv.cli._validation import validate_running_environment

        report = validate_running_environment(endpoint, timeout_s=timeout)
    except Exception as exc:
        log.warning("openenv validate --url %s failed: %s", endpoint, exc)
        return {"mode": "url", "verdict": "error", "checks": [], "error": f"{type(exc).__name__}: {exc}"[:500]}
    checks = [{"id": c["id"], "status": "pass" if c.get("passed") else "fail",
               "evidence": c.get("description", "") if c.get("passed") else f"{c.get('description', '')}: "
               f"expected {c.get('expected')}, got {c.get('actual')}"[:300]}
              for c in report.get("criteria", [])]  # fmt: skip
    return {"mode": "url", "verdict": "pass" if report.get("passed") else "fail", "checks": checks, "report": report}


def openenv_validation(endpoint: str, folder: Path | None) -> list[dict[str, Any]]:
    """Local mode when the version's folder declares a `validation:` block, URL mode always."""
    outcomes = []
    if folder is not None and has_validation_block(folder):
        outcomes.append(validate_package(folder))
    outcomes.append(validate_url(endpoint))
    return outcomes
