"""Checks before a run is queued: the environment starts and answers a reset and a step, the model's tokenizer
can call tools, and the settings fit. Failures come back as field errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError

from webapp.catalog.models import EnvironmentVersion
from webapp.runs.grpo import GRPOSettings

REPO_ROOT = Path(__file__).resolve().parents[2]


def check_model(model_name: str, team=None) -> None:
    """The tokenizer must support tool calls. Checked in a subprocess: the web process never imports TRL."""
    if model_name == "tiny-local":
        from workers.tiny_model import tiny_model_dir

        if not (tiny_model_dir(settings.DATA_DIR) / "config.json").exists():
            raise ValidationError({"model_name": "tiny-local is not built yet: run `manage.py bootstrap` first."})
        return
    from workers.warmstart import NAME, warmstart_dir, warmstart_version_for

    if NAME.match(model_name):
        version = warmstart_version_for(model_name, team) if team is not None else None
        if version is None:
            raise ValidationError({"model_name": f"{model_name} names no environment version you can see."})
        if not (warmstart_dir(settings.DATA_DIR, version) / "config.json").exists():
            raise ValidationError(
                {
                    "model_name": f"{model_name} is not warm-started yet: run `manage.py model "
                    f"warmstart --env {version.environment.slug} --version {version.label}`."
                }
            )
        return
    result = subprocess.run(
        [sys.executable, "-m", "workers.preflight", model_name], cwd=REPO_ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    try:
        verdict = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ValidationError({"model_name": f"could not check the model: {result.stderr[-500:]}"}) from None
    if not verdict.get("ok"):
        raise ValidationError({"model_name": verdict.get("reason", "the model cannot be used")})


def check_environment(version: EnvironmentVersion, provider: str) -> None:
    from envs.tools import example_arguments
    from webapp.catalog.services import version_testdrive, version_tool
    from webapp.runs.services import provider_for_version

    kind = provider_for_version(version, provider)
    if not version.tools:
        raise ValidationError({"env_version": f"{version} offers no tools to call."})
    tool = version_tool(version, version.tools[0]["name"])
    try:
        drive = version_testdrive(version=version, tool=tool.name, arguments=example_arguments(tool),
                                  provider_kind=kind)  # fmt: skip
    except ValidationError as exc:
        raise ValidationError({"env_version": exc.messages}) from exc
    if drive.error:
        raise ValidationError({"env_version": f"a scripted reset and step failed: {drive.error}"})


def preflight(
    *,
    version: EnvironmentVersion,
    model_name: str,
    config: dict,
    provider: str,
    replicas: int | None = None,
    team=None,
) -> None:
    from webapp.runs.services import provider_for_version, replicas_for_run

    settings_ = GRPOSettings.from_dict(config)
    replicas_for_run(version, settings_, replicas, provider_for_version(version, provider))
    check_model(model_name, team or version.environment.team)
    check_environment(version, provider)
