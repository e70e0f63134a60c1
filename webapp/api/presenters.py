"""Model rows as the API's schemas want them (one place, so that lists and details agree)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from webapp.artifacts.saved_models import SavedModel
from webapp.catalog.models import Environment
from webapp.evals.models import Evaluation
from webapp.runs.models import Episode, Run


def environment_out(environment: Environment) -> dict[str, Any]:
    return {
        "id": environment.pk, "name": environment.name, "slug": environment.slug, "team": environment.team.slug,
        "description": environment.description, "tags": list(environment.tags or []),
        "visibility": environment.visibility,
        "versions": [
            {"id": v.pk, "label": v.label, "source_kind": v.source_kind, "source_ref": v.source_ref,
             "pinned_ref": v.pinned_ref, "tools": [t.get("name", "") for t in v.tools or [] if isinstance(t, dict)],
             "capacity": v.capacity, "success_threshold": v.success_threshold, "settings": v.settings or {},
             "reward": v.reward_rule.as_dict(), "mcp": v.mcp, "transport": v.transport, "frozen": v.is_frozen,
             "created_at": v.created_at}
            for v in environment.versions.all()
        ],
    }  # fmt: skip


def run_out(run: Run) -> dict[str, Any]:
    return {
        "id": run.pk, "name": run.name, "kind": run.kind, "external": run.external or {}, "status": run.status,
        "failure_reason": run.failure_reason,
        "environment": run.env_version.environment.slug, "environment_version": run.env_version.label,
        "env_version_id": run.env_version_id, "model": run.model_name, "provider": run.provider, "step": run.step,
        "max_steps": run.max_steps, "config": run.config, "tags": list(run.tags or []), "created_at": run.created_at,
        "running_at": run.running_at, "finished_at": run.finished_at, "worker_host": run.worker_host,
        "resume_from": run.resume_from, "episodes": run.episodes_recorded, "env_tool_calls": run.env_tool_calls,
        "never_stepped_environment": run.never_stepped,
        "url": run.get_absolute_url(),
    }  # fmt: skip


def episode_out(e: Episode) -> dict[str, Any]:
    return {
        "id": e.pk, "step": e.step, "group": e.group, "index": e.index_in_group, "rank": e.rank,
        "environment": e.environment, "reward": e.reward, "advantage": e.advantage,
        "num_tool_calls": e.num_tool_calls, "num_tool_errors": e.num_tool_errors, "error": e.error,
        "prompt": e.prompt, "turns": e.turns,
    }  # fmt: skip


def saved_model_out(m: SavedModel) -> dict[str, Any]:
    return {
        "name": m.name, "model_name": m.model_name, "step": m.step, "size_bytes": m.size_bytes, "adapter": m.adapter,
        "download_url": reverse("runs:run-model-download", args=[m.run_id, m.name]),
    }  # fmt: skip


def evaluation_out(e: Evaluation) -> dict[str, Any]:
    return {
        "id": e.pk, "name": e.name, "status": e.status, "failure_reason": e.failure_reason, "model": e.model_name,
        "run": e.run_id, "step": e.step, "k": e.k, "greedy": e.greedy, "episodes_total": e.episodes_total,
        "episodes_done": e.episodes_done, "results": e.results or {}, "created_at": e.created_at,
    }  # fmt: skip
