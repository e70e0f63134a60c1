"""Evaluation episodes per second: the evaluator's episode loop (batches of episodes whose tool calls of a turn run
at once, TurnDispatcher as in training) against a sequential evaluation loop (one episode after another, one step
after another), over the same server whose step takes 20 ms.

The environment side is real (a process-provider server over OpenEnv's /ws protocol, the run's adapter class, resets
with seeds as the evaluator sends them); the model's side is scripted (each turn calls the tool), the boundary this
machine cannot measure honestly (a GPU): generation time is what a GPU adds to both loops alike. Prints one JSON line
last: ours / baseline episodes per second (goal >= 8)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from smoke import HELP, smoke_marked  # noqa: E402

from envs.adapter import tool_env_class  # noqa: E402
from envs.providers import EnvSource  # noqa: E402
from envs.providers.process import ProcessProvider  # noqa: E402
from envs.tools import tools_from_action_schema  # noqa: E402
from workers.training.concurrent_tools import TurnDispatcher  # noqa: E402

SLOW_ENV = ROOT / "tests" / "fixtures" / "envs" / "slow_step"


def call(seconds: float) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "sleep", "arguments": {"seconds": seconds}}}]}  # fmt: skip


def sequential(cls, seeds: list[int], turns: int, seconds: float) -> float:
    """The plain evaluation loop: for each seed, reset and play the episode to its end."""
    env = cls()
    started = time.perf_counter()
    for seed in seeds:
        env.reset(seed=seed)
        for _ in range(turns):
            env.sleep(seconds=seconds)
    elapsed = time.perf_counter() - started
    env._close()
    return elapsed


def batched(envs, seeds: list[int], turns: int, seconds: float) -> float:
    """The evaluator's loop: a batch of episodes reset (one after another, as TRL does), then each turn's tool calls of
    every episode of the batch at once."""
    cls = type(envs[0])
    started = time.perf_counter()
    for first in range(0, len(seeds), len(envs)):
        batch = seeds[first : first + len(envs)]
        for env, seed in zip(envs, batch, strict=False):
            env.reset(seed=seed)
        completions = [[] for _ in batch]
        for _ in range(turns):
            for messages in completions:
                messages.append(call(seconds))
            cls.dispatcher = TurnDispatcher(envs[: len(batch)], completions)
            try:
                for env, messages in zip(envs, completions, strict=False):  # the shape of TRL's tool loop
                    messages.append({"role": "tool", "name": "sleep", "content": env.sleep(seconds=seconds)})
            finally:
                cls.dispatcher = None
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32, help="the evaluator's batch (TRAINYARD_EVAL_BATCH)")
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--step-seconds", type=float, default=0.02)
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:
        args.episodes, args.batch, args.turns = 8, 4, 2
    provider = ProcessProvider()
    deployment = provider.provision(EnvSource("folder", str(SLOW_ENV), capacity=args.batch + 8))
    seeds = list(range(1000, 1000 + args.episodes))
    try:
        schema = httpx.get(deployment.endpoints[0] + "/schema").json()["action"]
        cls = tool_env_class(name="slow", tools=tools_from_action_schema(schema), endpoints=deployment.endpoints)
        envs = [cls() for _ in range(args.batch)]
        batched(envs, seeds[: args.batch], 1, args.step_seconds)  # warm up sockets
        base_s = sequential(cls, seeds, args.turns, args.step_seconds)
        ours_s = batched(envs, seeds, args.turns, args.step_seconds)
        for env in envs:
            env._close()
    finally:
        provider.teardown(deployment)
    base, ours = args.episodes / base_s, args.episodes / ours_s
    print(f"sequential evaluation loop: {base:.2f} episodes/s ({base_s:.2f} s for {args.episodes})")
    print(f"evaluator (batch {args.batch}):    {ours:.2f} episodes/s ({ours_s:.2f} s for {args.episodes})")
    print(
        json.dumps(
            smoke_marked(
                {
                    "metric": "eval_episode_throughput_ratio",
                    "value": round(ours / base, 2),
                    "unit": "ratio",
                    "goal": ">= 8",
                    "baseline": {"sequential_episodes_per_s": round(base, 2)},
                    "evaluator_episodes_per_s": round(ours, 2),
                    "episodes": args.episodes,
                    "batch": args.batch,
                    "turns": args.turns,
                    "step_seconds": args.step_seconds,
                }
            )
        )
    )


if __name__ == "__main__":
    main()
