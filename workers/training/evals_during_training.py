"""A run's evals during training: TRL calls `evaluate()` at step 0, every eval_steps and (from the trainer) at the
end; the hooks around each one write its Evaluation row (rank 0), record its episodes on every rank, and chart its
aggregates as eval/*."""

from __future__ import annotations

from typing import Any

from workers.training.ranks import barrier, rank


def eval_batch_size(run, settings: dict[str, Any], rows: int) -> int:
    """Held-out episodes played at once: as many as the run's replicas hold (up to TRAINYARD_EVAL_BATCH), whole
    groups of eval_k, never fewer than the training batch. The training sessions are reused, so the run holds the
    larger of the two at a time."""
    from django.conf import settings as django_settings

    k = settings.get("eval_k", 1)
    generation = settings["per_device_train_batch_size"] * settings["gradient_accumulation_steps"]
    if run.environments:  # a mixed run's replicas are sized per environment for training: stay within them
        return max(k, generation // k * k)
    room = run.replicas * run.env_version.effective_capacity // max(1, settings.get("processes", 1))
    batch = min(django_settings.TRAINYARD_EVAL_BATCH, room, rows * k)
    return max(k, generation // k * k, batch // k * k)


def evals_during_training(run, callback, settings: dict[str, Any], phase):
    """(begin, end, greedy): the hooks `evaluating_trainer` calls around each evaluate()."""
    from webapp.evals.models import Evaluation
    from webapp.evals.services import training_evaluation_create
    from webapp.live.publish import publish
    from webapp.runs.heldout import eval_seeds
    from webapp.runs.selectors import run_prompts
    from workers.training.evaluation_recording import EvalEpisodeRecorder, eval_metrics, evaluation_finish

    seeds = eval_seeds(settings)
    k, greedy = settings.get("eval_k", 1), settings.get("eval_greedy", True)
    prompts = [row["prompt"] for row in run_prompts(run=run)]

    def begin(trainer) -> None:
        step = trainer.state.global_step
        if rank() == 0:
            training_evaluation_create(run, step=step, seeds=seeds, k=k, greedy=greedy, prompts=prompts)
            publish(run.pk, [("run.log", {"line": f"evaluating step {step} on {len(seeds)} held-out seeds"
                                                  f"{' (greedy)' if greedy else ''}"})])  # fmt: skip
        barrier()
        phase.recorder = EvalEpisodeRecorder(Evaluation.objects.get(run=run, step=step))

    def end(trainer) -> None:
        step = trainer.state.global_step
        phase.recorder = None
        phase.evaluated_steps.append(step)
        barrier()
        if rank() != 0:
            return
        evaluation = Evaluation.objects.get(run=run, step=step)
        results = evaluation_finish(evaluation.pk)
        callback.metrics.record(step, eval_metrics(results))
        callback.metrics.flush()
        first = next(iter(results.values()))
        success = first["success_rate"]
        publish(run.pk, [("run.log", {"line": f"eval at step {step}: mean reward {first['mean_reward']['value']:.3f}, "
                                              f"success {success['value']:.0%} [{success['low']:.0%}, "
                                              f"{success['high']:.0%}] on {first['episodes']} episodes"})])  # fmt: skip

    return begin, end, greedy
