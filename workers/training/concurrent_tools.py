"""All rollouts' tool calls of a turn, dispatched at once.

TRL 1.16's `GRPOTrainer._tool_call_loop` executes the tool calls of one rollout after another (async tools overlap
only within one rollout), so environment latency adds up once per rollout. We leave that loop untouched and
prefetch instead: the first tool call of a turn finds, in the `completions` list the loop works on, every rollout
whose last message is an assistant turn with tool calls not yet run, and runs all of them concurrently (each
rollout's own calls stay in order: its environment is stateful). The loop then takes each result as it reaches
that rollout. A call that does not match what was prefetched (it should not happen) falls back to a direct step.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from typing import Any

from envs.adapter import ToolEnvironment, ToolEvent
from envs.event_loop import run_on_session_loop

TRL_VERSION = "1.16.0"


async def stamped(env: ToolEnvironment, spec, args: dict[str, Any]) -> ToolEvent:
    """A step, with when it began (`at`, Unix seconds): the trajectory's timeline places it after the reset."""
    began = time.time()
    event = await env._step_async(spec, args)
    event.at = began
    return event


class TurnDispatcher:
    def __init__(self, environments: list[ToolEnvironment], completions: list[list[dict[str, Any]]]) -> None:
        self.environments = environments
        self.completions = completions
        self._ready: dict[int, deque[tuple[str, dict[str, Any], ToolEvent]]] = {}
        self._seen: list[dict[str, Any]] = []  # messages already dispatched (kept alive so ids stay unique)
        self.turns = 0
        self.prefetched_calls = 0

    def take(self, env: ToolEnvironment, name: str, arguments: dict[str, Any]) -> ToolEvent | None:
        queue = self._ready.get(id(env))
        if not queue:
            self._prefetch_turn()
            queue = self._ready.get(id(env))
        if queue and queue[0][0] == name and queue[0][1] == arguments:
            return queue.popleft()[2]
        if queue:
            queue.clear()
        return None

    def _pending_calls(self, env: ToolEnvironment, message: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
        specs = {spec.name: spec for spec in env.tools}
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            spec = specs.get(function.get("name"))
            arguments = function.get("arguments")
            if call.get("type") != "function" or spec is None or not isinstance(arguments, dict):
                continue  # TRL fails these itself without calling us
            method = getattr(type(env), spec.name)
            try:
                bound = inspect.signature(method).bind(env, **arguments)
            except TypeError:
                continue  # TRL's call raises the same TypeError; the environment must not step
            calls.append((spec, {k: v for k, v in bound.arguments.items() if k != "self"}))
        return calls

    def _prefetch_turn(self) -> None:
        seen = {id(m) for m in self._seen}
        jobs = []
        for env, messages in zip(self.environments, self.completions, strict=False):
            if not messages or self._ready.get(id(env)):
                continue
            last = messages[-1]
            if last.get("role") != "assistant" or not last.get("tool_calls") or id(last) in seen:
                continue
            self._seen.append(last)
            calls = self._pending_calls(env, last)
            if calls:
                jobs.append((env, calls))
        if not jobs:
            return

        async def run_rollout(env: ToolEnvironment, calls):
            return env, [(spec.name, args, await stamped(env, spec, args)) for spec, args in calls]

        async def run_turn():
            return await asyncio.gather(*(run_rollout(env, calls) for env, calls in jobs))

        for env, results in run_on_session_loop(run_turn()):
            self._ready[id(env)] = deque(results)
            self.prefetched_calls += len(results)
        self.turns += 1


def concurrent_tools_trainer():
    """The GRPOTrainer subclass, built lazily so importing this module does not import TRL."""
    import trl
    from trl import GRPOTrainer

    if trl.__version__ != TRL_VERSION:
        raise RuntimeError(
            f"workers.training.concurrent_tools is pinned to TRL {TRL_VERSION} (found {trl.__version__}); check that "
            "GRPOTrainer._tool_call_loop still reads `completions` as described above, then update the pin"
        )

    class ConcurrentToolsGRPOTrainer(GRPOTrainer):
        last_dispatcher: TurnDispatcher | None = None

        def _tool_call_loop(self, prompts, prompt_ids, completion_ids, completions, *args, **kwargs):
            classes = {type(e) for e in self.environments or [] if isinstance(e, ToolEnvironment)}
            dispatcher = TurnDispatcher(list(self.environments or []), completions)
            self.last_dispatcher = dispatcher
            for cls in classes:
                cls.dispatcher = dispatcher
            try:
                return super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, *args, **kwargs)
            finally:
                for cls in classes:
                    cls.dispatcher = None

    return ConcurrentToolsGRPOTrainer
