"""Environment-step throughput of 32 concurrent rollouts: our turn dispatcher vs TRL's sequential tool loop.

One server of an environment whose step takes a fixed time (as a sandbox or a simulator does), 32 adapter
instances (rollout slots). Baseline: the tools called one rollout after another, which is what TRL 1.16's
`_tool_call_loop` does with sync tools. Ours: the same calls with the TurnDispatcher the trainer installs, which runs
every rollout's calls of the turn at once. Prints one JSON line last: ours / baseline throughput (goal >= 8).
"""

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


def play_turns(envs, turns: int, seconds: float, *, concurrent: bool) -> float:
    cls = type(envs[0])
    completions = [[] for _ in envs]
    started = time.perf_counter()
    for _ in range(turns):
        for messages in completions:
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "sleep", "arguments": {"seconds": seconds}}}]})  # fmt: skip
        cls.dispatcher = TurnDispatcher(envs, completions) if concurrent else None
        try:
            for env, messages in zip(envs, completions, strict=True):  # the shape of TRL's loop
                result = env.sleep(seconds=seconds)
                messages.append({"role": "tool", "name": "sleep", "content": result})
        finally:
            cls.dispatcher = None
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--step-seconds", type=float, default=0.02)
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:
        args.rollouts, args.turns = 4, 2
    provider = ProcessProvider()
    deployment = provider.provision(EnvSource("folder", str(SLOW_ENV), capacity=args.rollouts + 8))
    try:
        schema = httpx.get(deployment.endpoints[0] + "/schema").json()["action"]
        cls = tool_env_class(name="slow", tools=tools_from_action_schema(schema), endpoints=deployment.endpoints)
        envs = [cls() for _ in range(args.rollouts)]
        for env in envs:
            env.reset()
        play_turns(envs, 1, args.step_seconds, concurrent=True)  # warm up sockets
        sequential = play_turns(envs, args.turns, args.step_seconds, concurrent=False)
        concurrent = play_turns(envs, args.turns, args.step_seconds, concurrent=True)
        for env in envs:
            env._close()
    finally:
        provider.teardown(deployment)
    steps = args.rollouts * args.turns
    base, ours = steps / sequential, steps / concurrent
    print(f"sequential (TRL's loop): {base:.1f} steps/s  ({sequential:.2f} s for {steps} steps)")
    print(f"turn dispatcher:         {ours:.1f} steps/s  ({concurrent:.2f} s for {steps} steps)")
    print(
        json.dumps(
            smoke_marked(
                {
                    "metric": "rollout_step_throughput_ratio",
                    "value": round(ours / base, 2),
                    "unit": "ratio",
                    "goal": ">= 8",
                    "baseline": {"sequential_steps_per_s": round(base, 1)},
                    "concurrent_steps_per_s": round(ours, 1),
                    "rollouts": args.rollouts,
                    "step_seconds": args.step_seconds,
                }
            )
        )
    )


if __name__ == "__main__":
    main()
