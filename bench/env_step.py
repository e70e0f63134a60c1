"""Step latency through Trainyard's provider and session path vs OpenEnv's own client, on the same server.

Both clients talk to one guess-number server started by the process provider; they take turns in blocks so
machine noise hits both alike. Then the same for an MCP tool call: our session's `call_tool` step (what the
adapter sends for an MCP tool) against OpenEnv's own `MCPToolClient.call_tool`, on one MCP server (the mcp_vault
fixture, two FastMCP tools). Prints a line per client, then one JSON line: the ratio of our median to OpenEnv's
for plain steps (goal <= 1.10), with the MCP ratio (same goal) beside it.
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
from openenv.core.mcp_client import MCPToolClient
from smoke import HELP, smoke_marked

from envs.builtin import builtin_get
from envs.mcp_tools import mcp_result
from envs.providers import EnvSource
from envs.providers.process import ProcessProvider
from envs.session import EnvSession
from envs.tools import ToolSpec

MCP_FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "envs" / "mcp_vault"


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
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.block = 40, 20

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

    mcp_ours, mcp_theirs = mcp_calls(provider, args.steps, args.block)

    def summary(samples):
        return {"p50_ms": statistics.median(samples) * 1e3, "p99_ms": percentile(samples, 0.99) * 1e3}

    s_ours, s_theirs = summary(ours), summary(theirs)
    m_ours, m_theirs = summary(mcp_ours), summary(mcp_theirs)
    print(f"trainyard session: p50 {s_ours['p50_ms']:.3f} ms  p99 {s_ours['p99_ms']:.3f} ms  ({len(ours)} steps)")
    print(f"openenv client:    p50 {s_theirs['p50_ms']:.3f} ms  p99 {s_theirs['p99_ms']:.3f} ms  ({len(theirs)} steps)")
    print(f"p99 ratio: {s_ours['p99_ms'] / s_theirs['p99_ms']:.3f}")
    print(f"MCP call, trainyard session: p50 {m_ours['p50_ms']:.3f} ms  p99 {m_ours['p99_ms']:.3f} ms")
    print(f"MCP call, openenv MCPToolClient: p50 {m_theirs['p50_ms']:.3f} ms  p99 {m_theirs['p99_ms']:.3f} ms")
    mcp_ratio = m_ours["p50_ms"] / m_theirs["p50_ms"]
    print(f"MCP p50 ratio: {mcp_ratio:.3f} (goal <= 1.10)")
    print(
        json.dumps(
            smoke_marked(
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
                    "mcp_call_p50_ratio": round(mcp_ratio, 4),
                    "mcp_call_goal": "<= 1.10",
                    "mcp_call_trainyard_p50_ms": round(m_ours["p50_ms"], 4),
                    "mcp_call_openenv_mcp_client_p50_ms": round(m_theirs["p50_ms"], 4),
                }
            )
        )
    )


def mcp_calls(provider: ProcessProvider, steps: int, block: int) -> tuple[list[float], list[float]]:
    """One MCP tool call (read_dial), ours then OpenEnv's MCPToolClient, in alternating blocks on one server."""
    deployment = provider.provision(EnvSource("folder", str(MCP_FIXTURE)))
    tool = ToolSpec(name="read_dial", description="", parameters={"type": "object", "properties": {}}, mcp=True)
    ours: list[float] = []
    theirs: list[float] = []
    try:
        endpoint = deployment.endpoints[0]
        with EnvSession(endpoint) as session, MCPToolClient(base_url=endpoint).sync() as client:

            def our_call():
                text, error = mcp_result(session.step(tool.action({})).observation)
                assert error is None and text, error

            def their_call():
                assert client.call_tool("read_dial")

            for _ in range(20):
                session.reset(seed=1)
                our_call()
                client.reset(seed=1)
                their_call()
            while len(ours) < steps:
                ours += time_block(our_call, lambda: session.reset(seed=1), block)
                theirs += time_block(their_call, lambda: client.reset(seed=1), block)
    finally:
        provider.teardown(deployment)
    return ours, theirs


if __name__ == "__main__":
    main()
