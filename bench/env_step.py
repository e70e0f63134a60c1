"""Step latency through Trainyard's provider and session path vs OpenEnv's own client, on the same server.

Both clients talk to one guess-number server started by the process provider; they take turns in blocks so
machine noise hits both alike. Prints a line per client, then one JSON line: the ratio of our median to
OpenEnv's (goal <= 1.10).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from openenv.core.generic_client import GenericEnvClient

from envs.builtin import builtin_get
from envs.providers import EnvSource
from envs.providers.process import ProcessProvider
from envs.session import EnvSession


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def time_block(step, reset, n: int) -> list[float]:
    out = []
    reset()
    for i in range(n):
        if i % 5 == 4:
            reset()  # keep episodes short and alive: a finished game answers differently
        t = time.perf_counter()
        step()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--block", type=int, default=250)
    args = parser.parse_args()

    provider = ProcessProvider()
    deployment = provider.provision(EnvSource("folder", str(builtin_get("guess-number").folder)))
    ours: list[float] = []
    theirs: list[float] = []
    try:
        endpoint = deployment.endpoints[0]
        with EnvSession(endpoint) as session, GenericEnvClient(base_url=endpoint).sync() as client:
            action = {"number": 1}
            for _ in range(20):  # warm both paths
                session.reset(seed=1)
                session.step(action)
                client.reset(seed=1)
                client.step(action)
            while len(ours) < args.steps:
                ours += time_block(lambda: session.step(action), lambda: session.reset(seed=1), args.block)
                theirs += time_block(lambda: client.step(action), lambda: client.reset(seed=1), args.block)
    finally:
        provider.teardown(deployment)

    def summary(samples):
        return {"p50_ms": statistics.median(samples) * 1e3, "p99_ms": percentile(samples, 0.99) * 1e3}

    s_ours, s_theirs = summary(ours), summary(theirs)
    print(f"trainyard session: p50 {s_ours['p50_ms']:.3f} ms  p99 {s_ours['p99_ms']:.3f} ms  ({len(ours)} steps)")
    print(f"openenv client:    p50 {s_theirs['p50_ms']:.3f} ms  p99 {s_theirs['p99_ms']:.3f} ms  ({len(theirs)} steps)")
    print(f"p99 ratio: {s_ours['p99_ms'] / s_theirs['p99_ms']:.3f}")
    print(
        json.dumps(
            {
                "metric": "env_step_p50_ratio_vs_openenv_client",
                "value": round(s_ours["p50_ms"] / s_theirs["p50_ms"], 4),
                "unit": "ratio",
                "goal": "<= 1.10",
                "baseline": {
                    "openenv_client_p50_ms": round(s_theirs["p50_ms"], 4),
                    "openenv_client_p99_ms": round(s_theirs["p99_ms"], 4),
                },
                "p99_ratio": round(s_ours["p99_ms"] / s_theirs["p99_ms"], 4),
                "trainyard_p50_ms": round(s_ours["p50_ms"], 4),
                "trainyard_p99_ms": round(s_ours["p99_ms"], 4),
            }
        )
    )


if __name__ == "__main__":
    main()
