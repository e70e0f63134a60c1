"""What makes a TRL run a Trainyard run: the reward function (the environment's reward, every episode recorded) and
the callback (every logged metric, the heartbeat, the cooperative cancel)."""

from __future__ import annotations

import threading

from workers.training.ranks import all_ranks_agree, rank


def run_reward_and_callback(run, stop: threading.Event, phase=None):
    """The reward function and the callback of `run`. While `phase.recorder` is set, TRL is evaluating: the episodes
    are the evaluation's (held-out seeds), not training's."""
    from django.utils import timezone
    from transformers import TrainerCallback

    from webapp.runs.models import Run
    from workers.training.recording import EpisodeRecorder, MetricRecorder

    metrics = MetricRecorder(run) if rank() == 0 else None  # logs are the same on every rank: one writes them
    episodes = EpisodeRecorder(run, group_size=run.config["num_generations"], rank=rank())

    def environment_reward(prompts, completions, environments, trainer_state=None, **kwargs) -> list[float]:
        """The reward is what the environment paid, by its version's rule (summed, final, or its own); never the
        model's text. An environment that owns its reward is paid through its `get_reward` column: this column gives
        its rollouts None (TRL skips it), while every episode is recorded with the reward it earned."""
        rewards = [env._episode_reward() for env in environments]
        column = [env._column_reward() for env in environments]
        keys = kwargs.get("environment")  # a mixed run's routing column: each rollout's environment
        if phase is not None and phase.recorder is not None:
            phase.recorder.record(
                prompts=prompts,
                completions=completions,
                environments=environments,
                rewards=rewards,
                environment_keys=keys,
                completion_ids=kwargs.get("completion_ids"),
            )
            return column
        step = (trainer_state.global_step if trainer_state is not None else 0) + 1
        episodes.record(step=step, prompts=prompts, completions=completions, environments=environments,
                        rewards=rewards, environment_keys=keys)  # fmt: skip
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:  # charted per step: how many calls really reached the environment
            for name, value in episodes.last_counts.items():
                log_metric(name, value)
            for key in sorted(set(keys or [])):  # and what each environment paid
                mine = [r for r, k in zip(rewards, keys, strict=True) if k == key]
                log_metric(f"reward/{key}", sum(mine) / len(mine))
        return column

    class Record(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if metrics is not None:  # TRL's evaluation logs (eval_reward, eval_loss…) chart as eval/…
                metrics.record(state.global_step, {(f"eval/{k[5:]}" if k.startswith("eval_") else k): v
                                                   for k, v in (logs or {}).items()})  # fmt: skip

        def on_train_end(self, args, state, control, **kwargs):
            if metrics is not None:
                metrics.flush()

        def on_step_end(self, args, state, control, **kwargs):
            wants_stop = stop.is_set()
            if rank() == 0:
                Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
                wants_stop = wants_stop or Run.objects.filter(pk=run.pk, cancel_requested_at__isnull=False).exists()
            if all_ranks_agree(wants_stop, args.device):
                control.should_training_stop = True
                control.should_save = False

    callback = Record()
    callback.metrics = metrics  # the evals during training chart their aggregates through it
    return environment_reward, callback
