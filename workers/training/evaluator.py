"""The evaluator subprocess: `python -m workers.training.evaluator EVALUATION_ID`. It builds the same GRPOTrainer a run
would (model, adapter class over the provisioned servers, concurrent tool dispatch, environment reward) and calls
`evaluate()` once over the evaluation's episodes: no optimizer step is ever taken. Every sample is recorded
(evaluation_recording.py); the aggregates are written at the end. A failure goes to `failure.txt` for the worker."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def eval_batch(evaluation) -> int:
    """Samples generated at once: up to TRAINYARD_EVAL_BATCH, whole episodes (a multiple of k)."""
    from django.conf import settings

    k = evaluation.k
    return max(k, min(settings.TRAINYARD_EVAL_BATCH, evaluation.episodes_total) // k * k)


def eval_rows(evaluation, tools: dict[str, list[str]], descriptions: dict[str, str]) -> list[dict[str, Any]]:
    """One row per episode of each version: a seed with the default prompt, or a prompt of the prompts file."""
    from envs.prompts import default_prompt

    multi = len(evaluation.versions) > 1
    rows = []
    for entry in evaluation.versions:
        key = entry["key"]
        text = default_prompt(description=descriptions[key], tool_names=tools[key])
        prompts = evaluation.prompts or [text] * len(evaluation.seeds)
        for prompt, seed in zip(prompts, evaluation.seeds, strict=False):
            rows.append({"prompt": [{"role": "user", "content": prompt}], "seed": seed,
                         **({"environment": key} if multi else {})})  # fmt: skip
    return rows


def evaluate(evaluation) -> dict[str, Any]:
    from datasets import Dataset
    from django.conf import settings
    from transformers import AutoTokenizer

    from webapp.artifacts.layout import evaluation_dir
    from webapp.catalog.environment_class import version_env_class
    from webapp.catalog.models import EnvironmentVersion
    from webapp.runs.grpo import GRPOSettings
    from workers.models.resolve import model_path
    from workers.training.concurrent_tools import concurrent_tools_trainer
    from workers.training.evaluating_trainer import evaluating_trainer
    from workers.training.evaluation_recording import EvalEpisodeRecorder, evaluation_finish
    from workers.training.grpo_config import grpo_config

    versions = {v.pk: v for v in EnvironmentVersion.objects.select_related("environment").filter(
        pk__in=[e["version"] for e in evaluation.versions])}  # fmt: skip
    factory, tools, descriptions = {}, {}, {}
    for entry in evaluation.versions:
        version = versions[entry["version"]]
        endpoints = evaluation.deployment[entry["key"]]["endpoints"]
        factory[entry["key"]] = version_env_class(
            version, endpoints=endpoints, step_timeout=float(settings.TRAINYARD_ENV_STEP_TIMEOUT)
        )
        tools[entry["key"]] = [t.name for t in factory[entry["key"]].tools]
        descriptions[entry["key"]] = version.environment.description
    batch = eval_batch(evaluation)
    # The run settings the evaluation's decoding maps to; training settings are TRL's defaults, never used.
    settings_ = GRPOSettings(
        temperature=evaluation.temperature if not evaluation.greedy else 1.0, top_p=evaluation.top_p,
        max_completion_length=evaluation.max_tokens, max_tool_calling_iterations=evaluation.max_turns, max_steps=1,
        per_device_train_batch_size=2, num_generations=2, save_steps=10**6,
    ).as_dict()  # fmt: skip
    args = grpo_config(settings_, evaluation_dir(evaluation.pk) / "trainer")
    args.per_device_eval_batch_size = batch
    args.num_generations_eval = evaluation.k
    path = model_path(evaluation.model_name, evaluation.team)
    tokenizer = AutoTokenizer.from_pretrained(path)
    dataset = Dataset.from_list(eval_rows(evaluation, tools, descriptions))
    recorder = EvalEpisodeRecorder(evaluation)

    def environment_reward(prompts, completions, environments, **kwargs) -> list[float]:
        """What the environment paid by its version's rule, as in training; recorded with the whole episode (an
        environment that owns its reward is paid through its own `get_reward` column, as in training)."""
        rewards = [env._episode_reward() for env in environments]
        recorder.record(
            prompts=prompts,
            completions=completions,
            environments=environments,
            rewards=rewards,
            environment_keys=kwargs.get("environment"),
            completion_ids=kwargs.get("completion_ids"),
        )
        return [env._column_reward() for env in environments]

    trainer_class = evaluating_trainer(concurrent_tools_trainer(), greedy=evaluation.greedy, begin=lambda t: None,
                                       end=lambda t: None)  # fmt: skip
    trainer = trainer_class(
        model=path, reward_funcs=[environment_reward], args=args, train_dataset=dataset, eval_dataset=dataset,
        processing_class=tokenizer, environment_factory=factory if len(factory) > 1 else next(iter(factory.values())),
    )  # fmt: skip
    try:
        trainer.evaluate()
    finally:
        for pool in getattr(trainer, "_environment_pool", {}).values():
            for env in pool:
                env._close()
    return evaluation_finish(evaluation.pk)


def main(evaluation_id: int) -> int:
    import django

    from envs.parent_death import die_with_parent

    die_with_parent()  # an evaluator outliving its worker would record into an evaluation nobody supervises
    django.setup()
    from webapp.artifacts.layout import evaluation_dir, evaluation_failure_file
    from webapp.evals.models import Evaluation

    evaluation = Evaluation.objects.select_related("team").get(pk=evaluation_id)
    evaluation_dir(evaluation_id).mkdir(parents=True, exist_ok=True)
    failure = evaluation_failure_file(evaluation_id)
    failure.unlink(missing_ok=True)
    try:
        evaluate(evaluation)
    except Exception as exc:
        failure.write_text(f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc()[-6000:]}")
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
