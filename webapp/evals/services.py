"""Actions on evaluations: create one (checked, queued on a worker), cancel it, and the rows a run's evals during
training write. Reads live in selectors.py."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.models import EnvironmentVersion
from webapp.core.work_queue import WorkKind, work_queue
from webapp.evals.episode_budget import DEFAULT_MAX_TOKENS
from webapp.evals.models import ACTIVE, EVAL_TIMESTAMP_FIELD, EVAL_TRANSITIONS, EvalStatus, Evaluation
from webapp.evals.seeds import seeds_parse
from webapp.evals.selectors import evaluations_described, evaluations_waiting

# Bounds of what one evaluation may ask for: named in the errors.
BOUNDS: dict[str, tuple[float, float]] = {
    "episodes": (1, 4096),
    "k": (1, 64),
    "temperature": (0.0, 5.0),
    "top_p": (0.0, 1.0),
    "max_turns": (1, 1000),
    "max_tokens": (1, 131_072),
    "seed_start": (0, 2**53),
}
MAX_PROMPTS = 4096
MAX_PROMPT_CHARS = 20_000


def settings_key(*, seeds: list[int], prompts: list[str], k: int, greedy: bool, temperature: float, top_p: float,
                 max_turns: int, max_tokens: int) -> str:  # fmt: skip
    """What makes two evaluations' numbers comparable: the same episodes, samples and decoding. The leaderboard
    ranks only evaluations with the same key (and the same success threshold)."""
    body = {"seeds": seeds, "prompts": prompts, "k": k, "greedy": greedy, "max_turns": max_turns,
            "max_tokens": max_tokens, **({} if greedy else {"temperature": temperature, "top_p": top_p})}  # fmt: skip
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


def version_entry(version: EnvironmentVersion, key: str | None = None) -> dict[str, Any]:
    return {"version": version.pk, "key": key or version.environment.slug, "label": str(version),
            "threshold": version.success_threshold}  # fmt: skip


def _bounded(name: str, value: Any, kind: type) -> Any:
    lo, hi = BOUNDS[name]
    try:
        if isinstance(value, bool):
            raise ValueError
        number = kind(value)
        if kind is int and float(value) != number:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ValidationError({name: f"{name} must be a {'whole ' if kind is int else ''}number, "
                                     f"not {str(value)[:40]!r}."}) from None  # fmt: skip
    if number != number or not lo <= number <= hi:
        raise ValidationError({name: f"{name} must be between {lo:,} and {hi:,}, not {value}."})
    return number


def evaluation_create(
    *,
    team: Team,
    user,
    model_name: str,
    versions: list[EnvironmentVersion],
    episodes: int = 32,
    seed_start: int = 1_000_000,
    seeds: str = "",
    prompts: list[str] | None = None,
    k: int = 1,
    greedy: bool = True,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_turns: int = 6,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    provider: str | None = None,
    name: str = "",
    start: bool = True,
) -> Evaluation:
    """Record an evaluation and queue it on a worker (the `gpu` queue, like runs: it loads the model). The episodes
    are `seeds` (e.g. "1000-1063") or `episodes` seeds from `seed_start`, or one per prompt of `prompts`."""
    if user is not None:
        membership_require(user=user, team=team, role=Role.MEMBER)
    from webapp.artifacts.saved_models import saved_model_resolve
    from webapp.catalog.deployments import provider_for_version
    from webapp.core.text_bounds import text_bounds_check

    if not model_name or not model_name.strip():
        raise ValidationError(
            {"model_name": "name a model: tiny-local, a warm start, a Hub id, a path or run:ID/final"}
        )
    text_bounds_check(model_name=(model_name, 300), name=(name, 100))
    for field, text in (("model_name", model_name), ("name", name), ("prompts", "".join(map(str, prompts or [])))):
        if "\x00" in text:  # PostgreSQL stores no NUL character
            raise ValidationError({field: f"{field} contains a NUL character."})
    if not versions:
        raise ValidationError({"env_version": "choose at least one environment version to evaluate on"})
    if len({v.pk for v in versions}) != len(versions):
        raise ValidationError({"env_version": "a version is listed twice"})
    episodes = _bounded("episodes", episodes, int)
    seed_start = _bounded("seed_start", seed_start, int)
    k = _bounded("k", k, int)
    temperature = _bounded("temperature", temperature, float)
    top_p = _bounded("top_p", top_p, float)
    max_turns = _bounded("max_turns", max_turns, int)
    max_tokens = _bounded("max_tokens", max_tokens, int)
    if not greedy and temperature <= 0:
        raise ValidationError({"temperature": "sampling needs a temperature above 0 (or choose greedy decoding)"})
    prompt_list = [str(p) for p in prompts or []]
    if len(prompt_list) > MAX_PROMPTS or any(len(p) > MAX_PROMPT_CHARS for p in prompt_list):
        raise ValidationError({"prompts": f"at most {MAX_PROMPTS:,} prompts of {MAX_PROMPT_CHARS:,} characters"})
    seed_list = seeds_parse(seeds) if seeds.strip() else list(range(seed_start, seed_start + episodes))
    if prompt_list and not seeds.strip():
        seed_list = [seed_start + i for i in range(len(prompt_list))]  # one seed per prompt
    saved_model_resolve(model_name.strip(), team=team)  # a run:ID/NAME of another team is a field error
    kinds = {provider_for_version(v, provider) for v in versions}
    per_episode = len(prompt_list) if prompt_list else len(seed_list)
    entries = [version_entry(v) for v in versions]
    if len({e["key"] for e in entries}) != len(entries):  # two versions of one environment: key by label
        entries = [version_entry(v, f"{v.environment.slug}@{v.label}") for v in versions]
    with transaction.atomic():
        number = Evaluation.objects.filter(team=team).count() + 1
        evaluation = Evaluation.objects.create(
            team=team, created_by=user, name=name or f"eval-{number}", model_name=model_name.strip(),
            env_version=versions[0], versions=entries, seeds=seed_list, prompts=prompt_list, k=k, greedy=greedy,
            temperature=temperature, top_p=top_p, max_turns=max_turns, max_tokens=max_tokens,
            settings_key=settings_key(seeds=seed_list, prompts=prompt_list, k=k, greedy=greedy,
                                      temperature=temperature, top_p=top_p, max_turns=max_turns,
                                      max_tokens=max_tokens),
            provider=kinds.pop() if len(kinds) == 1 else (provider or settings.TRAINYARD_ENV_PROVIDER),
            episodes_total=per_episode * k * len(versions),
        )  # fmt: skip
        if start:  # a broker that is down loses nothing: it stays queued until a worker is ready
            work_queue("evaluation", evaluation.pk)
    return evaluation


EVALUATION_WORK = WorkKind(
    name="evaluation", task="workers.execute_evaluation", queue="gpu",
    stranded=lambda cutoff: Evaluation.objects.filter(status=EvalStatus.QUEUED, run__isnull=True, task_id="",
                                                      created_at__lt=cutoff).values_list("pk", flat=True),
    sent=lambda pk, task_id: Evaluation.objects.filter(pk=pk).update(task_id=task_id),
    waiting=evaluations_waiting, described=evaluations_described,
)  # fmt: skip


class IllegalEvaluationTransition(ValidationError):
    pass


def evaluation_transition(evaluation_id: int, to: str, *, reason: str = "", only_from: tuple[str, ...] = (),
                          **fields: Any) -> Evaluation:  # fmt: skip
    """Move an evaluation to status `to` if that move is legal from its stored status (checked in the database, under
    a row lock): the one writer of an evaluation's status. Stamps the move's time; a failure keeps its reason.
    `only_from`: the statuses this move may start from (narrower than the table)."""
    with transaction.atomic():
        current = Evaluation.objects.select_for_update().get(pk=evaluation_id)
        if to not in EVAL_TRANSITIONS[current.status] or (only_from and current.status not in only_from):
            raise IllegalEvaluationTransition(f"An evaluation cannot go from {current.status} to {to}.")
        updates: dict[str, Any] = {"status": to, **fields}
        if to in EVAL_TIMESTAMP_FIELD:
            updates[EVAL_TIMESTAMP_FIELD[to]] = timezone.now()
        if to == EvalStatus.FAILED or reason:
            updates["failure_reason"] = (reason or "failed")[:2000]
        Evaluation.objects.filter(pk=evaluation_id).update(**updates)
    return Evaluation.objects.get(pk=evaluation_id)


def evaluation_move(evaluation_id: int, to: str, *, reason: str = "", only_from: tuple[str, ...] = (),
                    **fields: Any) -> bool:  # fmt: skip
    """`evaluation_transition` where an illegal move is an answer, not an error: False when the evaluation was no
    longer where the move starts (a cancel won the race, or it already ended)."""
    try:
        evaluation_transition(evaluation_id, to, reason=reason, only_from=only_from, **fields)
    except IllegalEvaluationTransition:
        return False
    return True


def evaluation_cancel(*, user, evaluation: Evaluation) -> Evaluation:
    """A queued evaluation is cancelled at once; a running one is stopped by its worker within a second or two."""
    membership_require(user=user, team=evaluation.team, role=Role.MEMBER)
    if evaluation.run_id is not None:
        raise ValidationError({"evaluation": "an eval during training stops with its run: cancel the run"})
    if not evaluation_move(evaluation.pk, EvalStatus.CANCELLED, cancel_requested_at=timezone.now(),
                           only_from=(EvalStatus.QUEUED,)):  # fmt: skip
        evaluation_move(evaluation.pk, EvalStatus.CANCELLING)
    evaluation.refresh_from_db()
    return evaluation


def evaluation_fail(evaluation_id: int, reason: str) -> bool:
    """Fail an evaluation that has not ended; False when it already had."""
    return evaluation_move(evaluation_id, EvalStatus.FAILED, reason=reason)


def training_evaluation_create(run, *, step: int, seeds: list[int], k: int, greedy: bool,
                               prompts: list[str]) -> Evaluation:  # fmt: skip
    """The row of one eval during training (its run and step), written by the trainer when TRL starts evaluating.
    `prompts`: the run's prompt texts (none: the environment's default prompt)."""
    from webapp.catalog.models import EnvironmentVersion as Version

    config = run.config
    if run.environments:
        versions = {v.pk: v for v in Version.objects.select_related("environment").filter(
            pk__in=[e["version"] for e in run.environments])}  # fmt: skip
        entries = [version_entry(versions[e["version"]], e["key"]) for e in run.environments]
    else:
        entries = [version_entry(run.env_version)]
    temperature, top_p = config.get("temperature", 1.0), config.get("top_p", 1.0)
    max_turns, max_tokens = config["max_tool_calling_iterations"], config["max_completion_length"]
    prompts = sorted(set(prompts))
    Evaluation.objects.filter(run=run, step=step).delete()  # a resumed run evaluates the step again
    return Evaluation.objects.create(
        team=run.team, created_by=run.created_by, name=f"{run.name} @ step {step}",
        model_name=run.model_name if step == 0 else f"run:{run.pk}@step-{step}",
        env_version=run.env_version, versions=entries, run=run, step=step, seeds=seeds, prompts=prompts, k=k,
        greedy=greedy, temperature=temperature, top_p=top_p, max_turns=max_turns, max_tokens=max_tokens,
        settings_key=settings_key(seeds=seeds, prompts=prompts, k=k, greedy=greedy, temperature=temperature,
                                  top_p=top_p, max_turns=max_turns, max_tokens=max_tokens),
        provider=run.provider, status=EvalStatus.RUNNING, started_at=timezone.now(), heartbeat_at=timezone.now(),
        episodes_total=len(seeds) * k * len(entries), worker_host=run.worker_host,
    )  # fmt: skip


def training_evaluations_close(run, *, reason: str) -> None:
    """Evals of a run still marked running when its trainer ends (cancelled or failed mid-eval) say so."""
    final = EvalStatus.CANCELLED if "cancel" in reason else EvalStatus.FAILED
    for pk in Evaluation.objects.filter(run=run, status__in=ACTIVE).values_list("pk", flat=True):
        evaluation_move(pk, final, reason=reason)
