"""The trainer subprocess: `python -m workers.trainer RUN_ID`. The only module that imports torch and TRL.

It builds the dataset, the environment_factory class (envs.adapter) over the deployment the worker provisioned,
the GRPO config, and trains, recording every step and episode. It stops cooperatively when the run's cancel flag is
set (checked after every step) or on SIGTERM. A failure is written to `failure.txt` beside the checkpoints so the
worker can record the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from workers.ranks import all_ranks_agree, barrier, rank, world_size

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HEARTBEAT_SECONDS = 5.0


def build_dataset_rows(run, tool_names: list[str], mixed: dict[str, tuple[str, list[str]]] | None = None
                       ) -> list[dict[str, Any]]:  # fmt: skip
    """The run's prompts as conversational rows; with none, the environment's default prompt over seeds. A mixed run
    (`mixed`: key → (description, tool names) of each environment) gets an `environment` column that routes each
    row, in proportion to the mixture weights, and each environment's own default prompt."""
    from envs.prompts import default_prompt
    from webapp.runs.heldout import training_row_count, training_seed
    from webapp.runs.mixture import mixture_rows
    from webapp.runs.selectors import run_prompts

    settings = run.config
    rows = run_prompts(run=run)
    count = training_row_count(settings, len(rows), len(mixed or {}) or 1)
    if mixed:
        keys = mixture_rows(run.environments, count)
        if not rows:
            rows = [{"prompt": default_prompt(description=mixed[key][0], tool_names=mixed[key][1]),
                     "environment": key} for key in keys]  # fmt: skip
        else:
            rows = [{**row, "environment": row.get("environment") or keys[i]} for i, row in enumerate(rows)]
    elif not rows:
        text = default_prompt(description=run.env_version.environment.description, tool_names=tool_names)
        rows = [{"prompt": text} for _ in range(count)]
    out = []
    for i, row in enumerate(rows):
        row = dict(row)
        row["prompt"] = [{"role": "user", "content": row["prompt"]}]
        row["seed"] = training_seed(settings, row, i)
        out.append(row)
    return out


def model_path(run) -> str:
    return model_path_for(run.model_name, run.team)


def model_path_for(model_name: str, team) -> str:
    """A model name as a run or an evaluation gives it, resolved within `team`, as a path from_pretrained takes."""
    from django.conf import settings

    if model_name in {"tiny-local", "tiny-local (CPU)"}:
        from workers.tiny_model import ensure_tiny_model

        return str(ensure_tiny_model(Path(settings.DATA_DIR)))
    from workers.warmstart import NAME, warmstart_dir, warmstart_version_for

    if NAME.match(model_name):
        version = warmstart_version_for(model_name, team)
        path = warmstart_dir(Path(settings.DATA_DIR), version) if version is not None else None
        if path is None or not (path / "config.json").exists():
            raise RuntimeError(f"{model_name} is not warm-started on this machine: run `manage.py model warmstart "
                               f"--env {model_name.split('@', 1)[1].replace(':', ' --version ', 1)}`")  # fmt: skip
        return str(path)
    from webapp.runs.saved_models import saved_model_resolve

    saved = saved_model_resolve(model_name, team=team)
    if saved is not None:  # a run's checkpoint or final model; an adapter is merged into its base first
        from workers.model_export import trainable_path

        return str(trainable_path(saved, Path(settings.DATA_DIR)))
    return model_name  # a Hub id or a local path: from_pretrained takes both


def main(run_id: int) -> int:
    import django

    from envs.parent_death import die_with_parent

    if world_size() > 1:  # a rank's parent is torchrun (the worker's child, in the same process group)
        from envs.parent_death import PARENT_PID_VARIABLE

        os.environ[PARENT_PID_VARIABLE] = str(os.getppid())
    die_with_parent()  # the trainer dies with its worker: an unsupervised run is worse than a failed one
    django.setup()
    from django.utils import timezone

    from webapp.runs.models import Run
    from webapp.runs.services import run_artifact_dir

    run = Run.objects.select_related("env_version__environment", "team").get(pk=run_id)
    artifact_dir = run_artifact_dir(run)
    artifact_dir.mkdir(parents=True, exist_ok=True)
    failure_file = artifact_dir / "failure.txt"
    if rank() == 0:
        failure_file.unlink(missing_ok=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def heartbeat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            Run.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())

    if rank() == 0:
        threading.Thread(target=heartbeat, daemon=True, name="heartbeat").start()
    try:
        train(run, artifact_dir, stop)
    except Exception as exc:
        where = f"rank {rank()}: " if world_size() > 1 else ""
        if not failure_file.exists():  # the first rank to fail says why; the others fail because it did
            failure_file.write_text(f"{where}{type(exc).__name__}: {exc}\n\n{traceback.format_exc()[-6000:]}")
        traceback.print_exc()
        Run.objects.filter(pk=run_id).update(trainer_outcome="failed")
        return 1
    else:
        # Its own record of how it ended: if the worker dies now, the reaper still knows the run finished.
        stopped = stop.is_set() or Run.objects.filter(pk=run_id, cancel_requested_at__isnull=False).exists()
        if rank() == 0:
            Run.objects.filter(pk=run_id).update(trainer_outcome="stopped" if stopped else "succeeded")
    finally:
        stop.set()
        from webapp.live.publish import close_layer

        close_layer()
    return 0


def recording(run, stop: threading.Event, phase=None):
    """The reward function (environment rewards, recording every episode) and the callback (metrics, heartbeat,
    cooperative cancel) that make a TRL run a Trainyard run. While `phase.recorder` is set, TRL is evaluating: the
    episodes are the evaluation's (held-out seeds), not training's."""
    from django.utils import timezone
    from transformers import TrainerCallback

    from webapp.runs.models import Run
    from workers.recording import EpisodeRecorder, MetricRecorder

    metrics = MetricRecorder(run) if rank() == 0 else None  # logs are the same on every rank: one writes them
    episodes = EpisodeRecorder(run, group_size=run.config["num_generations"], rank=rank())

    def environment_reward(prompts, completions, environments, trainer_state=None, **kwargs) -> list[float]:
        """The reward is what the environment paid, summed over the episode's steps; never the model's text."""
        rewards = [env._episode_reward() for env in environments]
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
            return rewards
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
        return rewards

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


def build_eval_rows(run, tool_names: list[str], mixed: dict[str, tuple[str, list[str]]] | None = None
                    ) -> list[dict[str, Any]]:  # fmt: skip
    """The held-out rows of a run's evals during training: every held-out seed with the run's prompts in turn (or
    the default prompt), for each environment of a mixed run."""
    from envs.prompts import default_prompt
    from webapp.runs.heldout import eval_seeds
    from webapp.runs.selectors import run_prompts

    seeds = eval_seeds(run.config)
    prompts = [row["prompt"] for row in run_prompts(run=run)]
    if mixed:
        entries = [(key, default_prompt(description=description, tool_names=names))
                   for key, (description, names) in mixed.items()]  # fmt: skip
    else:
        entries = [(None, default_prompt(description=run.env_version.environment.description, tool_names=tool_names))]
    rows = []
    for key, default_text in entries:
        for i, seed in enumerate(seeds):
            text = prompts[i % len(prompts)] if prompts else default_text
            rows.append({"prompt": [{"role": "user", "content": text}], "seed": seed,
                         **({"environment": key} if key else {})})  # fmt: skip
    return rows


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
    """TRL calls `evaluate()` at step 0, every eval_steps and (from train()) at the end: the hooks around each one
    write its Evaluation row (rank 0), record its episodes on every rank, and chart its aggregates as eval/*."""
    from webapp.evals.models import Evaluation
    from webapp.evals.services import training_evaluation_create
    from webapp.live.publish import publish
    from webapp.runs.heldout import eval_seeds
    from workers.eval_recording import EvalEpisodeRecorder, eval_metrics, evaluation_finish

    seeds = eval_seeds(settings)
    k, greedy = settings.get("eval_k", 1), settings.get("eval_greedy", True)

    def begin(trainer) -> None:
        step = trainer.state.global_step
        if rank() == 0:
            training_evaluation_create(run, step=step, seeds=seeds, k=k, greedy=greedy)
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


def environment_factory(run, env_class):
    """TRL's environment_factory: the adapter class, or for a mixed run a dict of them by key, with what each
    environment's default prompt needs (description, tool names)."""
    if not run.environments:
        return env_class, None
    from envs.adapter import tool_env_class
    from webapp.catalog.models import EnvironmentVersion
    from workers.slot_keeper import lost_sessions_file

    first = run.environments[0]["key"]
    factory = {first: env_class}
    mixed = {first: (run.env_version.environment.description, [t.name for t in env_class.tools])}
    for entry in run.environments[1:]:
        version = EnvironmentVersion.objects.select_related("environment").get(pk=entry["version"])
        endpoints = run.deployment["environments"][entry["key"]]["endpoints"]
        other = tool_env_class(
            name=version.environment.slug, tools=version.tools, endpoints=endpoints,
            step_timeout=run.config["step_timeout"], reset_columns=version.settings.get("reset_args"),
            observation_fields=version.settings.get("observation_fields"), fixed_arguments=version.fixed_fields,
        )  # fmt: skip
        other.lost_sessions_file = str(lost_sessions_file(run))
        factory[entry["key"]] = other
        mixed[entry["key"]] = (version.environment.description, [t.name for t in other.tools])
    return factory, mixed


def final_save(trainer, run, tokenizer, *, base_model: str) -> None:
    """The model as training left it (the adapter alone for a LoRA run), with its tokenizer, in the run's `final`
    folder. Written beside it and renamed, and trainyard.json last: a half-written final model is never listed."""
    from webapp.runs.saved_models import final_dir

    final = final_dir(run)
    partial = final.with_name("final.partial")
    if rank() == 0:
        shutil.rmtree(partial, ignore_errors=True)
    barrier()
    trainer.save_model(str(partial))  # every rank calls it; the main process writes
    if rank() != 0:
        return
    tokenizer.save_pretrained(str(partial))
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    record = {"step": trainer.state.global_step, "base_model": base_model, "lora": bool(run.config.get("lora_r")),
              "run": run.pk}  # fmt: skip
    (final / "trainyard.json").write_text(json.dumps(record))


def train(run, artifact_dir: Path, stop: threading.Event) -> None:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer

    from envs.adapter import tool_env_class
    from webapp.core.heap import freeze_long_lived_objects
    from webapp.runs.models import Run
    from webapp.runs.saved_models import final_dir
    from workers.checkpoints import checkpoint_dir
    from workers.concurrent_tools import concurrent_tools_trainer
    from workers.grpo_config import grpo_config, lora_config
    from workers.slot_keeper import lost_sessions_file

    settings = run.config
    version = run.env_version
    endpoints = run.deployment.get("endpoints") or []
    if not endpoints:
        raise RuntimeError("the run has no provisioned environment endpoints")
    env_class = tool_env_class(
        name=version.environment.slug, tools=version.tools, endpoints=endpoints, step_timeout=settings["step_timeout"],
        reset_columns=version.settings.get("reset_args"), observation_fields=version.settings.get("observation_fields"),
        fixed_arguments=version.fixed_fields,
    )  # fmt: skip
    env_class.lost_sessions_file = str(lost_sessions_file(run))
    factory, mixed = environment_factory(run, env_class)
    path = model_path(run)
    tokenizer = AutoTokenizer.from_pretrained(path)
    dataset = Dataset.from_list(build_dataset_rows(run, [t.name for t in env_class.tools], mixed))
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    if rank() == 0:
        ranks = f" x {world_size()} processes" if world_size() > 1 else ""
        Run.objects.filter(pk=run.pk).update(gpu=f"{gpu}{ranks}")
    trainer_class = concurrent_tools_trainer()
    phase = eval_dataset = None
    if settings.get("eval_steps"):
        from webapp.evals.services import training_evaluations_close
        from workers.evaluating import EvalPhase, evaluating_trainer

        phase = EvalPhase()
        reward, callback = recording(run, stop, phase)
        begin, end, greedy = evals_during_training(run, callback, settings, phase)
        trainer_class = evaluating_trainer(trainer_class, greedy=greedy, begin=begin, end=end)
        eval_dataset = Dataset.from_list(build_eval_rows(run, [t.name for t in env_class.tools], mixed))
    else:
        reward, callback = recording(run, stop)
    args = grpo_config(settings, checkpoint_dir(artifact_dir))
    if eval_dataset is not None:
        args.per_device_eval_batch_size = eval_batch_size(run, settings, len(eval_dataset))
    trainer = trainer_class(
        model=path,
        reward_funcs=[reward],
        args=args,
        peft_config=lora_config(settings),
        train_dataset=dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        environment_factory=factory,
        callbacks=[callback],
    )
    # What TRL really trains with (every GRPOConfig field, defaults included), beside the checkpoints.
    if rank() == 0:
        (artifact_dir / "trainer_config.json").write_text(trainer.args.to_json_string())
    resume = run.resume_from or None
    if resume and not Path(resume).exists():
        resume = None
    from webapp.runs.services import run_records_truncate

    # The steps after the checkpoint (or all, from scratch) are played again: their first records go.
    resumed_at = json.loads((Path(resume) / "trainer_state.json").read_text())["global_step"] if resume else 0
    if rank() == 0:
        if run.step > resumed_at or run.episodes_recorded:  # a fresh run has nothing to forget: no queries then
            run_records_truncate(run, after_step=resumed_at)
        if not resume:  # from scratch: folders a run of this id left before (a reset database) are not this run's
            for stale in (checkpoint_dir(artifact_dir), final_dir(run)):
                shutil.rmtree(stale, ignore_errors=True)
    barrier()  # no rank records before rank 0 has forgotten the replayed steps
    freeze_long_lived_objects()  # model, tokenizer and trainer are built: they live as long as the run
    try:
        trainer.train(resume_from_checkpoint=resume)
        final_save(trainer, run, tokenizer, base_model=path)
        stopped = stop.is_set() or Run.objects.filter(pk=run.pk, cancel_requested_at__isnull=False).exists()
        if phase is not None and not stopped and trainer.state.global_step not in phase.evaluated_steps:
            trainer.evaluate()  # the end: the trained policy on the held-out seeds
    finally:
        if phase is not None and rank() == 0:
            training_evaluations_close(run, reason="the run stopped during this evaluation")
        for pool in getattr(trainer, "_environment_pool", {}).values():
            for env in pool:
                env._close()


def standby() -> int:
    """`--standby`: import everything training needs, then wait for `RUN_ID LOG_PATH` on stdin and become that
    run's trainer, writing to its log. The worker keeps one such process ready (workers/standby.py); an empty line
    or a closed stdin ends it."""
    import django

    from envs.parent_death import die_with_parent

    die_with_parent()
    django.setup()
    import datasets  # noqa: F401
    import peft  # noqa: F401
    import torch  # noqa: F401
    from trl import GRPOConfig, GRPOTrainer  # noqa: F401

    import envs.adapter  # noqa: F401
    import workers.concurrent_tools
    import workers.recording  # noqa: F401

    print("standing by", flush=True)
    line = sys.stdin.readline().strip()
    if not line:
        return 0
    run_id, log_path = line.split(" ", 1)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    print(f"a standby trainer (libraries imported) takes run {run_id}", flush=True)
    return main(int(run_id))


if __name__ == "__main__":
    sys.exit(standby() if sys.argv[1] == "--standby" else main(int(sys.argv[1])))
