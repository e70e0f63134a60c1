"""GRPO step time with Trainyard's adapter and recorder, divided by bare TRL with an in-process environment.

Same tiny model, same seed, same config, same game: the baseline's environment class calls the guess-number logic
in-process and its reward function only sums rewards; ours talks to a real server over OpenEnv's WebSocket through
the generated adapter and the turn dispatcher, and records every metric and episode into the database and the
channel layer. Median step time over the measured steps; one JSON line last (goal <= 1.03).

And the cost of the token-level trajectory recording: the same Trainyard run with one GRPO group a step traced token
by token (workers/training/token_tracing.py) against none, in the same rounds (`token_traces` in the JSON line:
goal <= 1.03).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from smoke import HELP, smoke_marked
from step_timing import step_timer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = Path(tempfile.mkdtemp(prefix="trainyard-bench-"))
os.environ.setdefault("TRAINYARD_DATA_DIR", str(DATA))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def in_process_env_class(tools):
    """The baseline's environment: guess-number's own logic in this process, with the adapter's exact tool text."""
    from envs.adapter import docstring, format_observation
    from envs.guess_number.models import GuessAction
    from envs.guess_number.server.environment import GuessNumberEnvironment

    class InProcessGuessNumber:
        def __init__(self):
            self.env = GuessNumberEnvironment()
            self.total = 0.0

        def reset(self, **row):
            self.total = 0.0
            kwargs = {k: v for k, v in row.items() if k != "prompt"}
            return "\n\n" + format_observation(self.env.reset(**kwargs).model_dump())

        def guess(self, number: int) -> str:
            obs = self.env.step(GuessAction(number=number))
            self.total += obs.reward or 0.0
            return format_observation(obs.model_dump())

    InProcessGuessNumber.guess.__doc__ = docstring(tools[0])
    return InProcessGuessNumber


def timed(function, spent: list[float]):
    def call(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    return call


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="alternate baseline and ours this many times")
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.warmup, args.rounds = 1, 0, 1  # one step of each, unwarmed: a smoke checks the path

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from webapp.core.embedded_redis import ensure_running

    started_redis = settings.REDIS_IS_EMBEDDED and ensure_running(Path(settings.EMBEDDED_REDIS_SOCKET))
    call_command("migrate", verbosity=0)

    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from envs.adapter import tool_env_class
    from envs.tools import ToolSpec
    from webapp.accounts.models import Team
    from webapp.catalog.deployments import provider_get, version_source
    from webapp.catalog.models import TrustReport
    from webapp.catalog.services import builtins_register
    from webapp.catalog.trust import trust_check_run
    from webapp.runs.models import Run
    from webapp.runs.services import run_create
    from workers.models.tiny import ensure_tiny_model
    from workers.training.callbacks import run_reward_and_callback
    from workers.training.concurrent_tools import concurrent_tools_trainer
    from workers.training.dataset import build_dataset_rows
    from workers.training.grpo_config import grpo_config
    from workers.training.token_tracing import TokenTracer, token_tracing_trainer

    model = str(ensure_tiny_model(progress=lambda m, f: print(f"… {m}", file=sys.stderr)))
    team = Team.objects.create(name="bench", slug="bench")
    version = next(v for v in builtins_register(team=team, user=None) if v.environment.slug == "guess-number")
    # The bench's environment is trusted the way any is: its trust check runs here, for real, and the run's gate
    # reads the report (a check pending or failed would refuse the run, as it would a user's). A smoke checks the
    # bench's path, not the environment (the trust check has tests of its own): it says so instead.
    trust = {}
    if args.smoke:
        trust["trust_override_reason"] = "bench smoke: its path is checked, not the environment"
    else:
        report = trust_check_run(report=TrustReport.objects.create(version=version), provider_kind="process")
        print(f"trust check of {version}: {report.verdict}", file=sys.stderr)
    # A small learning rate keeps the policy calling tools for the whole measurement (the workload we care about).
    config = {"max_steps": args.steps + args.warmup, "temperature": 0.7, "save_steps": 10_000, "learning_rate": 1e-5}
    run = run_create(team=team, user=None, env_version=version, config=config, start=False, **trust)
    tools = [ToolSpec.from_dict(t) for t in version.tools]
    tokenizer = AutoTokenizer.from_pretrained(model)
    dataset = Dataset.from_list(build_dataset_rows(run, [t.name for t in tools]))
    provider = provider_get("process")
    source = version_source(version)
    deployment = provider.provision(source)
    results: dict[str, list[float]] = {"baseline": [], "trainyard": [], "traced": []}
    recording_seconds: list[float] = []
    try:
        for label in ["baseline", "trainyard", "traced"] * args.rounds:
            timer = step_timer()
            if label == "baseline":
                env_class = in_process_env_class(tools)

                def reward(prompts, completions, environments, **kwargs):
                    return [env.total for env in environments]

                trainer_class, callbacks, reward_funcs = GRPOTrainer, [timer], [reward]
            else:
                env_class = tool_env_class(name="guess-number", tools=tools, endpoints=deployment.endpoints)
                Run.objects.filter(pk=run.pk).update(deployment=deployment.as_dict())
                reward_func, record = run_reward_and_callback(run, threading.Event())
                trainer_class, callbacks, reward_funcs = concurrent_tools_trainer(), [record, timer], [reward_func]
                if label == "traced":  # one GRPO group a step recorded token by token, as a run does by default
                    tracer = TokenTracer(run.pk, tokenizer, groups=1, group_size=run.config["num_generations"])
                    trainer_class = token_tracing_trainer(trainer_class, tracer)
                    # The recording's own time, read directly too: on a busy machine it is steadier than a ratio.
                    tracer.record = timed(tracer.record, recording_seconds)
            trainer = trainer_class(
                model=model, reward_funcs=reward_funcs, args=grpo_config(run.config, DATA / label),
                train_dataset=dataset, processing_class=tokenizer, environment_factory=env_class, callbacks=callbacks,
            )  # fmt: skip
            trainer.train()
            results[label].append(statistics.median(timer.times[args.warmup :]))
            print(f"{label}: median step {results[label][-1] * 1e3:.1f} ms over {len(timer.times) - args.warmup} steps")
    finally:
        provider.teardown(deployment)
        if started_redis:
            from webapp.core.embedded_redis import stop
            from webapp.live.publish import close_layer

            close_layer()
            stop(Path(settings.EMBEDDED_REDIS_SOCKET))
    # The least disturbed round of each: machine noise only ever adds time.
    best = {label: min(times) for label, times in results.items()}
    ratio = best["trainyard"] / best["baseline"]
    traced = best["traced"] / best["trainyard"]
    traced_steps = max(1, (args.steps + args.warmup) * args.rounds)
    print(
        json.dumps(
            smoke_marked(
                {
                    "metric": "grpo_step_time_ratio_vs_bare_trl",
                    "value": round(ratio, 4),
                    "unit": "ratio",
                    "goal": "<= 1.03",
                    "baseline": {"bare_trl_median_step_ms": round(best["baseline"] * 1e3, 1)},
                    "trainyard_median_step_ms": round(best["trainyard"] * 1e3, 1),
                    "token_traces": {
                        "metric": "step_time_ratio_token_traces_on_vs_off",
                        "value": round(traced, 4),
                        "unit": "ratio",
                        "goal": "<= 1.03",
                        "baseline": {"traces_off_median_step_ms": round(best["trainyard"] * 1e3, 1)},
                        "traces_on_median_step_ms": round(best["traced"] * 1e3, 1),
                        # the recorder's own time per step, against the untraced step (all traced steps counted)
                        "recording_ms_per_step": round(1e3 * sum(recording_seconds) / traced_steps, 2),
                        "recording_share_of_step": round(sum(recording_seconds) / traced_steps / best["trainyard"], 5),
                    },
                }
            )
        )
    )


if __name__ == "__main__":
    main()
