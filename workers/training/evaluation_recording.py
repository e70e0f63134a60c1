"""What an evaluation records: every sample of every held-out episode in full (EvalEpisode), its progress, and at the
end its aggregates (webapp.evals.results). Used by the standalone evaluator and by a run's evals during training;
runs inside the trainer or evaluator subprocess, with Django set up."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from envs.adapter import ToolEnvironment
from webapp.evals.models import EvalEpisode, EvalStatus, Evaluation
from webapp.evals.results import FIELDS, evaluation_results
from webapp.evals.services import evaluation_transition
from workers.training.recording import episode_turns, prompt_text, row_key


class EvalEpisodeRecorder:
    def __init__(self, evaluation: Evaluation) -> None:
        self.evaluation_id = evaluation.pk
        self.keys = {entry["key"]: entry for entry in evaluation.versions}
        self.default_key = evaluation.versions[0]["key"]
        self.samples: Counter[tuple[str, str]] = Counter()  # (environment, row_key) → samples recorded so far

    def record(self, *, prompts: list[Any], completions: list[list[dict[str, Any]]],
               environments: list[ToolEnvironment], rewards: list[float], environment_keys: list[str] | None = None,
               completion_ids: list[list[int]] | None = None) -> list[EvalEpisode]:  # fmt: skip
        rows = []
        for index, (prompt, completion, env, reward) in enumerate(zip(prompts, completions, environments, rewards,
                                                                      strict=True)):  # fmt: skip
            log = env.episode
            key = (environment_keys[index] if environment_keys else None) or self.default_key
            entry = self.keys[key]
            turns = episode_turns(completion, log)
            tool_turns = [t for t in turns if t["role"] == "tool"]
            text = prompt_text(prompt)
            reset_kwargs = log.reset_kwargs if log else {}
            rkey = row_key(text, reset_kwargs)
            sample = self.samples[(key, rkey)]
            self.samples[(key, rkey)] += 1
            seed = reset_kwargs.get("seed")
            rows.append(EvalEpisode(
                evaluation_id=self.evaluation_id, environment=key, version_id=entry["version"],
                seed=seed if isinstance(seed, int) else None, row_key=rkey, sample=sample, prompt=text,
                reset_kwargs=reset_kwargs, turns=turns, reward=reward, success=reward > entry.get("threshold", 0.0),
                num_turns=sum(1 for t in turns if t["role"] == "assistant"),
                num_tokens=len(completion_ids[index]) if completion_ids else 0,
                num_tool_calls=len(tool_turns), num_tool_errors=sum(1 for t in tool_turns if t.get("error")),
                env_episode_id=log.episode_id if log else "", error=(log.error or "") if log else "",
            ))  # fmt: skip
        with transaction.atomic():
            EvalEpisode.objects.bulk_create(rows)
            Evaluation.objects.filter(pk=self.evaluation_id).update(
                episodes_done=F("episodes_done") + len(rows), heartbeat_at=timezone.now()
            )
        return rows


def evaluation_finish(evaluation_id: int) -> dict[str, Any]:
    """Compute the aggregates from the recorded episodes and mark the evaluation succeeded."""
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    episodes = list(EvalEpisode.objects.filter(evaluation_id=evaluation_id).values(*FIELDS))
    thresholds = {entry["key"]: entry.get("threshold", 0.0) for entry in evaluation.versions}
    results = evaluation_results(episodes, k=evaluation.k, thresholds=thresholds)
    if not episodes:
        raise RuntimeError("the evaluation recorded no episode")
    evaluation_transition(evaluation_id, EvalStatus.SUCCEEDED, results=results, heartbeat_at=timezone.now())
    return results


def eval_metrics(results: dict[str, Any]) -> dict[str, float]:
    """An evaluation's aggregates as `eval/*` chart series: the first environment's plain names (a single-environment
    run's only one), every environment's as `eval/<key>/…`."""
    out: dict[str, float] = {}
    for position, (key, result) in enumerate(results.items()):
        prefixes = ["eval/", f"eval/{key}/"] if position == 0 and len(results) > 1 else (
            ["eval/"] if position == 0 else [f"eval/{key}/"])  # fmt: skip
        for prefix in prefixes:
            more = [n for n in result if n.startswith("pass@") and n != "pass@1"]
            for name in ("mean_reward", "success_rate", "pass@1", *more):
                interval = result[name]
                out[f"{prefix}{name}"] = interval["value"]
                out[f"{prefix}{name}_low"] = interval["low"]
                out[f"{prefix}{name}_high"] = interval["high"]
            for name in ("tool_error_rate", "turns_per_episode", "tokens_per_episode", "tool_calls_per_episode"):
                out[f"{prefix}{name}"] = result[name]
    return out
