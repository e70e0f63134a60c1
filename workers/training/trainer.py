"""The trainer subprocess: `python -m workers.training.trainer RUN_ID` (or a standby one, `--standby`, handed the
run on its stdin).

It builds the dataset (dataset.py), the environment_factory class over the deployment the worker provisioned
(environments.py), the GRPO config (grpo_config.py), and trains, recording every step and episode (callbacks.py),
with evals during training when the run asks (evals_during_training.py). It stops cooperatively when the run's
cancel flag is set (checked after every step) or on SIGTERM. A failure is written to the run's `failure.txt` so the
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

from workers.training.ranks import barrier, rank, world_size

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HEARTBEAT_SECONDS = 5.0


def main(run_id: int) -> int:
    import django

    from envs.parent_death import die_with_parent

    if world_size() > 1:  # a rank's parent is torchrun (the worker's child, in the same process group)
        from envs.parent_death import PARENT_PID_VARIABLE

        os.environ[PARENT_PID_VARIABLE] = str(os.getppid())
    die_with_parent()  # the trainer dies with its worker: an unsupervised run is worse than a failed one
    django.setup()
    from django.utils import timezone

    from webapp.artifacts.layout import run_dir, run_failure_file
    from webapp.runs.models import Run

    run = Run.objects.select_related("env_version__environment", "team").get(pk=run_id)
    run_dir(run_id).mkdir(parents=True, exist_ok=True)
    failure_file = run_failure_file(run_id)
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
        train(run, stop)
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


def final_save(trainer, run, tokenizer, *, base_model: str) -> None:
    """The model as training left it (the adapter alone for a LoRA run), with its tokenizer, in the run's `final`
    folder. Written beside it and renamed, and trainyard.json last: a half-written final model is never listed."""
    from webapp.artifacts.layout import run_final_dir

    final = run_final_dir(run.pk)
    partial = final.with_name("final.partial")
    if rank() == 0:
        shutil.rmtree(partial, ignore_errors=True)
    barrier()
    trainer.save_model(str(partial))  # every rank calls it; the main process writes
    if rank() != 0:
        return
    from workers.training.publishing import final_publish

    tokenizer.save_pretrained(str(partial))
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    record = {"step": trainer.state.global_step, "base_model": base_model, "lora": bool(run.config.get("lora_r")),
              "run": run.pk}  # fmt: skip
    (final / "trainyard.json").write_text(json.dumps(record))
    final_publish(run.pk, final)


def train(run, stop: threading.Event) -> None:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer

    from webapp.artifacts.layout import (
        run_checkpoints_dir,
        run_final_dir,
        run_lost_sessions_file,
        run_trainer_config_file,
    )
    from webapp.catalog.environment_class import version_env_class
    from webapp.core.heap import freeze_long_lived_objects
    from webapp.runs.models import Run
    from workers.models.resolve import model_path
    from workers.training.callbacks import run_reward_and_callback
    from workers.training.concurrent_tools import concurrent_tools_trainer
    from workers.training.dataset import build_dataset_rows, build_eval_rows
    from workers.training.environments import environment_factory
    from workers.training.grpo_config import grpo_config, lora_config
    from workers.training.publishing import CheckpointPublisher, checkpoint_local, file_publish, run_files_forget

    settings = run.config
    endpoints = run.deployment.get("endpoints") or []
    if not endpoints:
        raise RuntimeError("the run has no provisioned environment endpoints")
    env_class = version_env_class(run.env_version, endpoints=endpoints, step_timeout=settings["step_timeout"],
                                  lost_sessions_file=run_lost_sessions_file(run.pk))  # fmt: skip
    factory, mixed = environment_factory(run, env_class)
    path = model_path(run.model_name, run.team)
    tokenizer = AutoTokenizer.from_pretrained(path)
    dataset = Dataset.from_list(build_dataset_rows(run, [t.name for t in env_class.tools], mixed))
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    if rank() == 0:
        ranks = f" x {world_size()} processes" if world_size() > 1 else ""
        Run.objects.filter(pk=run.pk).update(gpu=f"{gpu}{ranks}")
    from workers.training.token_tracing import TokenTracer, token_tracing_trainer

    tracer = TokenTracer(run.pk, tokenizer, groups=settings.get("token_trace_groups", 1),
                         group_size=settings["num_generations"], rank=rank())  # fmt: skip
    trainer_class = token_tracing_trainer(concurrent_tools_trainer(), tracer)
    phase = eval_dataset = None
    if settings.get("eval_steps"):
        from webapp.evals.services import training_evaluations_close
        from workers.training.evals_during_training import eval_batch_size, evals_during_training
        from workers.training.evaluating_trainer import EvalPhase, evaluating_trainer

        phase = EvalPhase()
        reward, callback = run_reward_and_callback(run, stop, phase)
        begin, end, greedy = evals_during_training(run, callback, settings, phase)
        trainer_class = evaluating_trainer(trainer_class, greedy=greedy, begin=begin, end=end)
        eval_dataset = Dataset.from_list(build_eval_rows(run, [t.name for t in env_class.tools], mixed))
    else:
        reward, callback = run_reward_and_callback(run, stop)
    args = grpo_config(settings, run_checkpoints_dir(run.pk))
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
        callbacks=[callback, CheckpointPublisher(run.pk)],
    )
    # What TRL really trains with (every GRPOConfig field, defaults included), beside the checkpoints.
    if rank() == 0:
        run_trainer_config_file(run.pk).write_text(trainer.args.to_json_string())
        file_publish(run.pk, run_trainer_config_file(run.pk))
    resume = checkpoint_local(run.pk, run.resume_from)  # pulled from the store when another host wrote it
    from webapp.runs.services import run_records_truncate

    # The steps after the checkpoint (or all, from scratch) are played again: their first records go.
    resumed_at = json.loads((Path(resume) / "trainer_state.json").read_text())["global_step"] if resume else 0
    if rank() == 0:
        if run.step > resumed_at or run.episodes_recorded:  # a fresh run has nothing to forget: no queries then
            run_records_truncate(run, after_step=resumed_at)
        if not resume:  # from scratch: folders a run of this id left before (a reset database) are not this run's
            for stale in (run_checkpoints_dir(run.pk), run_final_dir(run.pk)):
                shutil.rmtree(stale, ignore_errors=True)
            run_files_forget(run.pk)
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
    run's trainer, writing to its log. The worker keeps one such process ready (workers/worker/standby.py); an empty
    line or a closed stdin ends it."""
    import django

    from envs.parent_death import die_with_parent

    die_with_parent()
    django.setup()
    import datasets  # noqa: F401
    import peft  # noqa: F401
    import torch  # noqa: F401
    from trl import GRPOConfig, GRPOTrainer  # noqa: F401

    import envs.adapter  # noqa: F401
    import workers.training.callbacks
    import workers.training.concurrent_tools
    import workers.training.recording  # noqa: F401

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
