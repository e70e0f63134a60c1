"""A run's pre-flight, run on a worker as a job (workers/worker/jobs.py) before the run is queued: the environment
starts and answers a reset and a step, the model's tokenizer can call tools (checked in a subprocess that gives up
after 10 s), and TRL itself judges the settings (its GRPOConfig built in a subprocess). Failures come back as field
errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from django.core.exceptions import ValidationError

from webapp.catalog.models import EnvironmentVersion
from webapp.runs.spec import CheckedRun

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_CHECK_SECONDS = 10


def check_model(model_name: str, team=None) -> None:
    """The tokenizer must support tool calls. Checked in a subprocess: the web process never imports TRL."""
    from webapp.artifacts.model_names import (
        TINY_MODEL,
        WARMSTART_NAME,
        tiny_model_built,
        warmstart_built,
    )
    from webapp.artifacts.saved_models import saved_model_resolve
    from webapp.catalog.selectors import warmstart_version_for

    # Read from the artifact store: the web host need not hold a model that a worker host pulls.
    if model_name == TINY_MODEL:
        if not tiny_model_built():
            raise ValidationError({"model_name": "tiny-local is not built yet: run `manage.py bootstrap` first."})
        return
    if team is not None and saved_model_resolve(model_name, team=team) is not None:
        return  # a model this team's run saved, with its tokenizer (TRL trained it, so it calls tools)
    if WARMSTART_NAME.match(model_name):
        version = warmstart_version_for(model_name, team) if team is not None else None
        if version is None:
            raise ValidationError({"model_name": f"{model_name} names no environment version you can see."})
        if not warmstart_built(version):
            raise ValidationError(
                {
                    "model_name": f"{model_name} is not warm-started yet: run `manage.py model "
                    f"warmstart --env {version.environment.slug} --version {version.label}`."
                }
            )
        return
    # A Hub that cannot be reached must say so within seconds, not after huggingface_hub's retries (~1 min).
    env = {**os.environ, "HF_HUB_ETAG_TIMEOUT": "4", "HF_HUB_DOWNLOAD_TIMEOUT": "4", "HF_HUB_DISABLE_TELEMETRY": "1"}
    try:
        result = subprocess.run(
            [sys.executable, "-m", "workers.models.tokenizer_check", model_name], cwd=REPO_ROOT, capture_output=True,
            text=True, timeout=MODEL_CHECK_SECONDS, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ValidationError(
            {"model_name": f"could not load {model_name}'s tokenizer within {MODEL_CHECK_SECONDS} s: the Hugging Face "
                           "Hub is unreachable or slow from the worker (a local path or a warm-started model needs "
                           "no network)."}
        ) from None  # fmt: skip
    try:
        verdict = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ValidationError({"model_name": f"could not check the model: {result.stderr[-500:]}"}) from None
    if not verdict.get("ok"):
        raise ValidationError({"model_name": verdict.get("reason", "the model cannot be used")})


class TrlSettingsCheck:
    """Builds the real GRPOConfig and LoraConfig in a subprocess, so TRL's and peft's own checks judge the values
    (the form checked names and types). Started first and read last: its ~5 s of importing TRL overlap the other
    checks. A refusal comes back on the field it concerns."""

    def __init__(self, config: dict) -> None:
        command = [sys.executable, "-m", "workers.training.grpo_config", "check"]
        pipe = subprocess.PIPE
        self.process = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=pipe, text=True, cwd=REPO_ROOT)
        self.config = json.dumps(config)

    def verdict(self, timeout: float = 120) -> None:
        try:
            out, err = self.process.communicate(self.config, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise ValidationError({"advanced": f"TRL did not judge the settings within {timeout:.0f} s"}) from None
        try:
            verdict = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise ValidationError({"advanced": f"could not check the settings with TRL: {err[-500:]}"}) from None
        if not verdict.get("ok"):
            raise ValidationError({verdict.get("field") or "advanced": verdict["reason"]})

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def check_environment(version: EnvironmentVersion, provider: str, progress=lambda m: None) -> None:
    from envs.tools import example_arguments
    from webapp.catalog.deployments import provider_for_version
    from webapp.catalog.services import version_testdrive, version_tool

    kind = provider_for_version(version, provider)
    if not version.tools:
        raise ValidationError({"env_version": f"{version} offers no tools to call."})
    tool = version_tool(version, version.tools[0]["name"])
    try:
        drive = version_testdrive(version=version, tool=tool.name, arguments=example_arguments(tool),
                                  provider_kind=kind, progress=progress)  # fmt: skip
    except ValidationError as exc:
        raise ValidationError({"env_version": exc.messages}) from exc
    if drive.error:
        raise ValidationError({"env_version": f"a scripted reset and step failed: {drive.error}"})


def preflight(checked: CheckedRun, *, team, progress: Callable[[str, float], None] = lambda m, f: None) -> None:
    """Runs on a worker (a job): it starts the environments and may load a tokenizer from the Hub."""
    spec = checked.spec
    progress("checking the settings", 0.05)
    trl_check = TrlSettingsCheck(checked.settings.as_dict())
    try:
        progress(f"checking that {spec.model_name}'s tokenizer can call tools", 0.15)
        check_model(spec.model_name, team)
        progress("starting the environment for a scripted reset and step", 0.4)
        check_environment(spec.env_version, checked.provider, progress=lambda message: progress(message, 0.6))
        for other, _ in spec.mixture:  # a mixed run: every environment answers a scripted reset and step
            progress(f"starting {other} for a scripted reset and step", 0.7)
            check_environment(other, checked.provider, progress=lambda message: progress(message, 0.8))
        progress("checking the settings with TRL's GRPOConfig", 0.9)
        trl_check.verdict()
    finally:
        trl_check.close()
