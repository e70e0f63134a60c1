"""A run's specification: what a run is asked to be, before anything is written, and the one function that judges it.

The run form, the pre-flight job, `manage.py run create`, clone and resume (and the API) all fill a `RunSpec` and call
`run_spec_check`, which writes nothing and raises a ValidationError naming the field; `run_create` (services.py)
checks the same way and then records the run. A spec travels to the pre-flight job as JSON (`as_params`,
`from_params`), with version ids re-read there within what its user may still see.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.deployments import provider_for_version
from webapp.catalog.models import EnvironmentVersion
from webapp.core.text_bounds import text_bounds_check
from webapp.fleet.fit import fleet_fit_check
from webapp.runs.grpo import GRPOSettings
from webapp.runs.heldout import heldout_check

TINY_MODEL = "tiny-local"
PROVIDERS = {"process", "docker", "url"}


@dataclass(frozen=True)
class RunSpec:
    env_version: EnvironmentVersion
    model_name: str = TINY_MODEL
    prompts: list[Any] = field(default_factory=list)  # texts, or rows with `prompt` and reset columns
    config: dict[str, Any] = field(default_factory=dict)  # GRPO settings (GRPOSettings.from_dict reads them)
    replicas: int | None = None  # None: as many as a step's sessions need
    provider: str | None = None  # None: where the version runs by default (TRAINYARD_ENV_PROVIDER)
    name: str = ""
    tags: list[str] = field(default_factory=list)
    trust_override_reason: str = ""
    transcript_policy: str = "all"
    mixture: list[tuple[EnvironmentVersion, float]] = field(default_factory=list)  # other versions, weights
    env_weight: float = 1.0

    def as_params(self) -> dict[str, Any]:
        """JSON for a job: versions by id."""
        return {
            "version": self.env_version.pk, "model_name": self.model_name, "prompts": list(self.prompts),
            "config": self.config, "replicas": self.replicas, "provider": self.provider, "name": self.name,
            "tags": list(self.tags), "trust_override_reason": self.trust_override_reason,
            "transcript_policy": self.transcript_policy, "mixture": [[v.pk, w] for v, w in self.mixture],
            "env_weight": self.env_weight,
        }  # fmt: skip

    @classmethod
    def from_params(cls, params: dict[str, Any], *, user) -> RunSpec:
        """A spec from a job's JSON, its versions re-read within what `user` may see now (a team change between the
        click and the job refuses it)."""
        from webapp.catalog.selectors import environment_list

        visible = EnvironmentVersion.objects.filter(environment__in=environment_list(user=user))
        version = visible.filter(pk=params.get("version")).select_related("environment").first()
        if version is None:
            raise ValidationError({"env_version": "that environment version no longer exists or is no longer yours"})
        pairs = params.get("mixture") or []
        found = visible.select_related("environment").in_bulk([pk for pk, _ in pairs])
        if len(found) != len({pk for pk, _ in pairs}):
            raise ValidationError({"mixture": "an environment of the mixture no longer exists or is no longer yours"})
        return cls(
            env_version=version, model_name=params.get("model_name") or TINY_MODEL, prompts=params.get("prompts") or [],
            config=params.get("config") or {}, replicas=params.get("replicas"), provider=params.get("provider"),
            name=params.get("name") or "", tags=params.get("tags") or [],
            trust_override_reason=params.get("trust_override_reason") or "",
            transcript_policy=params.get("transcript_policy") or "all",
            mixture=[(found[pk], weight) for pk, weight in pairs], env_weight=params.get("env_weight") or 1.0,
        )  # fmt: skip


@dataclass(frozen=True)
class CheckedRun:
    """A spec that passed every check, with what the checks worked out."""

    spec: RunSpec
    settings: GRPOSettings
    provider: str
    replicas: int
    rows: list[dict[str, Any]]
    environments: list[dict[str, Any]]  # a mixed run's versions with keys, weights and replicas; [] for one
    parent: Any  # the saved model it starts from (webapp.artifacts.saved_models.SavedModel), or None


def run_spec_check(spec: RunSpec, *, team: Team, user) -> CheckedRun:
    """Every check a run must pass before it is recorded, cheapest first; writes nothing. A refusal is a
    ValidationError naming the field."""
    if user is not None:
        membership_require(user=user, team=team, role=Role.MEMBER)
    settings_ = GRPOSettings.from_dict(spec.config)
    provider = provider_for_version(spec.env_version, spec.provider)
    if provider not in PROVIDERS:
        raise ValidationError({"provider": f"unknown provider {provider!r}"})
    replicas = replicas_for_run(spec.env_version, settings_, spec.replicas, provider)
    fleet_fit_check(gpus=settings_.gpus, generation_backend=settings_.generation_backend, cluster=settings_.cluster)
    if not spec.model_name.strip():
        raise ValidationError({"model_name": "name a model: tiny-local, a Hub id or a local path"})
    text_bounds_check(model_name=(spec.model_name, 300), name=(spec.name, 100),
                      trust_override_reason=(spec.trust_override_reason, 5000),
                      tags=(",".join(spec.tags or []), 500))  # fmt: skip
    rows = prompts_normalize(spec.prompts)
    if spec.transcript_policy not in {"all", "sample"}:
        raise ValidationError({"transcript_policy": "keep 'all' transcripts or a 'sample'"})
    from webapp.catalog.trust import trust_gate

    environments = environments_for_run(team, spec.env_version, spec.env_weight, spec.mixture, settings_, provider,
                                        replicas)  # fmt: skip
    heldout_check(settings_.as_dict(), rows, max(1, len(environments)))
    for version in [spec.env_version] + [v for v, _ in spec.mixture]:
        held_back = trust_gate(version)
        if held_back and not spec.trust_override_reason.strip():
            raise ValidationError({"trust_override_reason": f"{held_back}; give a reason to run it anyway."})
    from webapp.artifacts.saved_models import saved_model_resolve

    parent = saved_model_resolve(spec.model_name, team=team)  # train from a run's checkpoint: its lineage
    return CheckedRun(spec=spec, settings=settings_, provider=provider, replicas=replicas, rows=rows,
                      environments=environments, parent=parent)  # fmt: skip


def prompts_from_jsonl(text: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError({"prompts_file": f"line {number} is not JSON: {exc.msg}"}) from None
        if not isinstance(row, dict) or "prompt" not in row:
            raise ValidationError({"prompts_file": f"line {number} must be an object with a 'prompt' field"})
        rows.append(row)
    if not rows:
        raise ValidationError({"prompts_file": "the file has no rows"})
    return rows


def prompts_normalize(prompts: list[Any] | None) -> list[dict[str, Any]]:
    """Inline prompts may be plain strings; rows are dicts with `prompt` (a string) and any reset columns.
    Bounded by TRAINYARD_MAX_PROMPT_ROWS rows and TRAINYARD_MAX_PROMPTS_MB of JSON."""
    rows = []
    for item in prompts or []:
        row = {"prompt": item} if isinstance(item, str) else dict(item) if isinstance(item, dict) else {}
        if not isinstance(row.get("prompt"), str) or not row["prompt"].strip():
            raise ValidationError({"prompts": "every prompt needs non-empty text"})
        rows.append(row)
    if len(rows) > settings.TRAINYARD_MAX_PROMPT_ROWS:
        raise ValidationError(
            {"prompts": f"{len(rows):,} prompts; a run takes at most {settings.TRAINYARD_MAX_PROMPT_ROWS:,}."}
        )
    size = len(json.dumps(rows))
    if size > settings.TRAINYARD_MAX_PROMPTS_MB * 1_000_000:
        raise ValidationError(
            {"prompts": f"the prompts take {size / 1e6:.1f} MB; a run takes at most "
                        f"{settings.TRAINYARD_MAX_PROMPTS_MB} MB (TRAINYARD_MAX_PROMPTS_MB)."}
        )  # fmt: skip
    return rows


MAX_REPLICAS = 64


def sessions_needed(config: GRPOSettings) -> int:
    """Sessions a run holds at once: TRL keeps one environment per rollout of its generation batch, in every rank."""
    return config.per_device_train_batch_size * config.gradient_accumulation_steps * config.processes


def replicas_for_run(version: EnvironmentVersion, config: GRPOSettings, wanted: int | None, provider: str) -> int:
    """The replicas a run needs for its whole generation batch, or a field error that gives the numbers. `wanted`
    None means "as many as needed"; a run never discovers its environment's capacity at step 1."""
    needed = sessions_needed(config)
    per_replica = version.effective_capacity
    required = -(-needed // per_replica)
    measured = (f"measured {version.capacity_measured}" if version.capacity_measured is not None
                else "not measured")  # fmt: skip
    ranks = f" x {config.processes} processes" if config.processes > 1 else ""
    numbers = (f"a step holds {needed} sessions at once (batch {config.per_device_train_batch_size} x "
               f"accumulation {config.gradient_accumulation_steps}{ranks}); {version} takes {per_replica} a replica "
               f"(declared {version.capacity}, {measured})")  # fmt: skip
    if provider == "url":
        urls = len([u for u in version.source_ref.split(",") if u.strip()])
        if urls < required:
            raise ValidationError({"env_version": f"{numbers}: it needs {required} servers, and the URL names {urls}."})
        return urls
    if wanted is None:
        wanted = required
    if wanted < 1 or wanted > MAX_REPLICAS:
        raise ValidationError({"replicas": f"replicas must be between 1 and {MAX_REPLICAS}"})
    if required > MAX_REPLICAS:
        raise ValidationError({"per_device_train_batch_size": f"{numbers}: that is {required} replicas, more than "
                               f"{MAX_REPLICAS}; use a smaller batch."})  # fmt: skip
    if wanted < required:
        raise ValidationError({"replicas": f"{numbers}: it needs at least {required} replicas, not {wanted}."})
    return wanted


def environments_for_run(team: Team, primary: EnvironmentVersion, primary_weight: float,
                         extra: list[tuple[EnvironmentVersion, float]], config: GRPOSettings, provider: str,
                         replicas: int) -> list[dict[str, Any]]:  # fmt: skip
    """A mixed run's environments (its own version first), each with its key, weight and replicas sized for a whole
    step (a batch may draw all its rows from one environment). Empty for a run of one environment."""
    from django.db.models import Q

    from webapp.catalog.models import Visibility
    from webapp.runs.mixture import mixture_check, mixture_keys

    if not extra:
        return []
    mixture_check(primary, primary_weight, extra)
    for version, _ in extra:
        visible = Q(team=team) | Q(visibility=Visibility.SHARED)
        if not type(version.environment).objects.filter(visible, pk=version.environment_id).exists():
            raise ValidationError({"mixture": f"{version} is not an environment your team may use."})
    versions = [primary] + [v for v, _ in extra]
    keys = mixture_keys(versions)
    weights = [primary_weight] + [w for _, w in extra]
    entries = []
    for index, (version, key, weight) in enumerate(zip(versions, keys, weights, strict=True)):
        kind = provider_for_version(version, provider)
        count = replicas if index == 0 else replicas_for_run(version, config, None, kind)
        entries.append({"version": version.pk, "key": key, "weight": weight, "replicas": count, "provider": kind})
    return entries
