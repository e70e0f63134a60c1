"""Catalog tool schemas → a TRL `environment_factory` class, with no glue code per environment.

The generated class has `reset(**row)`, one typed method per tool (signature, type hints and a Google-style
docstring built from the JSON schema, which is what TRL turns into the tool list the model sees), and
`_episode_reward()`. Each instance holds one OpenEnv WebSocket session (one rollout slot). Rewards come from the
environment's observations, never from the model's text, by the version's reward rule (envs/rewards.py: summed, the
final step's, or the environment's own, which makes the class define TRL's `get_reward()`); the environment's
`state` is never fetched.
Every step is cut off by our own timeout, after which the session is thrown away and the episode ends.
"""

from __future__ import annotations

import inspect
import itertools
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from envs.event_loop import run_on_session_loop
from envs.mcp_tools import mcp_result
from envs.refusals import refused_in_words
from envs.rewards import RewardRule, field_value, step_credits
from envs.session import AsyncEnvSession, EnvError, SessionBroken, SessionTimedOut
from envs.tools import ToolSpec
from envs.volatile import steady, without_step_counters

JSON_TYPES: dict[str, Any] = {
    "integer": int,
    "number": float,
    "string": str,
    "boolean": bool,
    "array": list,
    "object": dict,
}
RESERVED_ROW_KEYS = {"prompt", "completion", "environment"}


class ToolFailed(Exception):
    """A tool call the environment refused or could not answer; TRL shows this text to the model."""


@dataclass
class ToolEvent:
    tool: str
    arguments: dict[str, Any]
    result: str
    observation: dict[str, Any] | None
    reward: float | None
    done: bool
    error: str | None
    seconds: float
    credit: float | None = None  # the environment's rubric's credit for this step, where the server sends it


@dataclass
class EpisodeLog:
    episode_id: str
    reset_kwargs: dict[str, Any]
    reset_observation: dict[str, Any] = field(default_factory=dict)
    last_observation: dict[str, Any] = field(default_factory=dict)  # what the last accepted step (or reset) showed
    events: list[ToolEvent] = field(default_factory=list)
    done: bool = False
    error: str | None = None

    @property
    def reward(self) -> float:
        return float(sum(e.reward or 0.0 for e in self.events))

    def reward_by(self, rule: RewardRule) -> float:
        """The episode's reward under a version's rule: summed, or read from the step that ended the episode (the
        last step the environment answered when it never ended: a rubric's intermediate value, usually 0)."""
        if rule.kind == "sum":
            return self.reward
        answered = [e for e in self.events if e.observation is not None]
        if not answered:
            return 0.0
        last = next((e for e in reversed(answered) if e.done), answered[-1])
        value = field_value(last.observation, last.reward, rule.field if rule.kind == "environment" else "reward")
        return value if value is not None else 0.0

    def credit_steps(self, final_observation: dict[str, Any] | None) -> None:
        """Give each accepted step its share of a rubric's verdict, where the final observation carries one per
        step (the last N accepted steps when it counts fewer: chess counts the agent's own moves)."""
        credits = step_credits(final_observation)
        if not credits:
            return
        accepted = [e for e in self.events if e.observation is not None and not e.error]
        for event, credit in zip(
            accepted[-len(credits) :], credits[-len(accepted) :] if accepted else [], strict=False
        ):
            event.credit = credit


def python_type(prop: dict[str, Any]) -> Any:
    if "enum" in prop and all(isinstance(v, str | int) for v in prop["enum"]):
        return Literal[tuple(prop["enum"])]
    return JSON_TYPES.get(prop.get("type", "string"), str)


def docstring(tool: ToolSpec) -> str:
    lines = [tool.description or f"Call {tool.name}.", "", "Args:"]
    for name, prop in tool.parameters.get("properties", {}).items():
        description = " ".join(str(prop.get("description") or name).split())
        lines.append(f"    {name}: {description}")
    return "\n".join(lines)


def format_observation(observation: dict[str, Any], fields: list[str] | tuple[str, ...] | None = None) -> str:
    """What the model reads: the observation's own fields and its `metadata` (where environments often keep the
    useful part: a maze's layout, a status), without OpenEnv's reward/done bookkeeping. `fields` narrows it to a
    version's chosen fields. An empty `metadata` is left out, so environments that never fill it read as before."""
    if fields is not None:
        shown = {k: observation[k] for k in fields if k in observation and k not in {"reward", "done"}}
    else:
        shown = {k: v for k, v in observation.items() if k not in {"reward", "done"}}
    if not shown.get("metadata"):
        shown.pop("metadata", None)
    if set(shown) == {"message"}:
        return str(shown["message"])
    return json.dumps(shown, ensure_ascii=False, default=str)


def refused_by_penalty(reward: float | None, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """A step that cost something and changed nothing is a refusal in other words: OpenEnv's chess answers an
    illegal move with -0.1 and the same board, no error. Counted as accepted, it taught the model to send random
    words. Timings, lifetime counters and the episode's step counter may move (envs/volatile.py: OpenEnv's maze
    counts a move into a wall as a step); nothing else may."""
    if reward is None or reward >= 0 or not before:
        return False

    def content(observation: dict[str, Any]) -> Any:
        return without_step_counters(steady({k: v for k, v in observation.items() if k not in {"reward", "done"}}))

    return content(before) == content(after)


class ToolEnvironment:
    """Base of generated classes; subclasses set `tools`, `endpoints` and `step_timeout`.

    TRL exposes every public method but `reset` as a tool, so everything of the adapter's own is private.
    """

    tools: tuple[ToolSpec, ...] = ()
    endpoints: tuple[str, ...] = ()
    step_timeout: float = 30.0
    reset_columns: tuple[str, ...] | None = None  # dataset columns passed to reset (None: all but the prompt)
    observation_fields: tuple[str, ...] | None = None  # what the model reads (None: every field and metadata)
    reward_rule: RewardRule = RewardRule()  # how an episode's reward is read (envs/rewards.py)
    _slots = itertools.count()
    # Set by the trainer to overlap all rollouts' calls of a turn (workers/concurrent_tools.py).
    dispatcher: Any = None
    # Set by the trainer: a file that gets one line (the endpoint) per session lost to a timeout. The server may go
    # on running the hung call and keep that session's slot; the worker reads the file (workers/slot_keeper.py).
    lost_sessions_file: str | None = None

    def __init__(self) -> None:
        slot = next(type(self)._slots)
        self.endpoint = self.endpoints[slot % len(self.endpoints)]
        self._session: AsyncEnvSession | None = None
        self.episode: EpisodeLog | None = None
        self._lock = threading.Lock()

    # -- episode ------------------------------------------------------------------------------------------
    def reset(self, **row: Any) -> str:
        kwargs = {k: v for k, v in row.items() if k not in RESERVED_ROW_KEYS}
        if self.reset_columns is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self.reset_columns}
        episode_id = str(uuid.uuid4())
        self.episode = EpisodeLog(episode_id=episode_id, reset_kwargs=kwargs)
        if self._session is None or self._session.broken:
            self._session = AsyncEnvSession(self.endpoint, timeout=self.step_timeout)
        # reset() raising would crash the run (TRL's contract), so it is retried once on a fresh session.
        try:
            result = run_on_session_loop(self._session.reset(episode_id=episode_id, **kwargs))
        except SessionBroken as exc:
            self._session_lost(exc)
            self._session = AsyncEnvSession(self.endpoint, timeout=self.step_timeout)
            result = run_on_session_loop(self._session.reset(episode_id=episode_id, **kwargs))
        self.episode.reset_observation = self.episode.last_observation = result.observation
        return "\n\n" + format_observation(result.observation, self.observation_fields)

    async def _step_async(self, tool: ToolSpec, arguments: dict[str, Any]) -> ToolEvent:
        """Take one step; never raises: failures become events with an error."""
        started = time.perf_counter()
        episode = self.episode
        if episode is None:
            return ToolEvent(tool.name, arguments, "", None, None, False, "reset() was not called", 0.0)
        if episode.done:
            message = "The episode is over; no more actions are taken."
            return ToolEvent(tool.name, arguments, message, None, None, True, message, 0.0)
        action = tool.action(arguments)
        try:
            assert self._session is not None
            result = await self._session.step(action)
        except EnvError as exc:
            return ToolEvent(tool.name, arguments, "", None, None, False, str(exc), time.perf_counter() - started)
        except SessionBroken as exc:
            self._session_lost(exc)
            episode.done = True
            episode.error = str(exc)
            return ToolEvent(tool.name, arguments, "", None, None, True, str(exc), time.perf_counter() - started)
        error = None
        if tool.mcp:
            text, error = mcp_result(result.observation)
        else:
            text = format_observation(result.observation, self.observation_fields)
        if error is None and not result.done and refused_by_penalty(result.reward, episode.last_observation,
                                                                       result.observation):  # fmt: skip
            error = f"refused: the environment answered with a penalty ({result.reward:g}) and nothing changed"
        elif error is None and not result.done and (said := refused_in_words(episode.last_observation,
                                                                            result.observation)):  # fmt: skip
            error = f"refused: the environment answered: {said}"
        elif error is None:
            episode.last_observation = result.observation
        event = ToolEvent(
            tool.name, arguments, text, result.observation, result.reward, result.done, error,
            time.perf_counter() - started,
        )  # fmt: skip
        episode.done = result.done
        return event

    def _session_lost(self, exc: SessionBroken) -> None:
        if isinstance(exc, SessionTimedOut) and self.lost_sessions_file:
            with open(self.lost_sessions_file, "a") as ledger:  # one short line: appends never interleave
                ledger.write(self.endpoint + "\n")

    def _record(self, event: ToolEvent) -> str:
        """Keep the event in the episode and hand TRL its result (or raise, so TRL counts a tool failure)."""
        if self.episode is not None:
            self.episode.events.append(event)
            if event.done and event.observation is not None:
                self.episode.credit_steps(event.observation)
        if event.error:
            raise ToolFailed(event.error)
        return event.result

    def _call_tool(self, tool: ToolSpec, arguments: dict[str, Any]) -> str:
        if self.dispatcher is not None:
            prefetched = self.dispatcher.take(self, tool.name, arguments)
            if prefetched is not None:
                return self._record(prefetched)
        return self._record(run_on_session_loop(self._step_async(tool, arguments)))

    def _episode_reward(self) -> float:
        """The episode's reward by the version's rule: what every record and evaluation of it says."""
        return self.episode.reward_by(self.reward_rule) if self.episode is not None else 0.0

    def _column_reward(self) -> float | None:
        """What Trainyard's own reward column gives this episode: nothing (None, which TRL skips) when the
        environment owns the reward, since its `get_reward` column pays it; else the episode's reward."""
        return None if self.reward_rule.kind == "environment" else self._episode_reward()

    def _close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            try:
                run_on_session_loop(session.close(), timeout=5)
            except Exception:  # noqa: S110 - closing a dead socket may fail; nothing is lost
                pass


def _get_reward(self: ToolEnvironment) -> float:
    """The environment's own reward for the episode just played (TRL calls it once the rollout ends)."""
    return self._episode_reward()


def _tool_method(tool: ToolSpec):
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    # Required arguments first (Python's order; OpenEnv's calendar lists `calendarId` after optional ones), each
    # group in the schema's own order.
    for name in sorted(properties, key=lambda n: n not in required):
        prop = properties[name]
        annotation = python_type(prop)
        default = inspect.Parameter.empty if name in required else prop.get("default")
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=annotation)
        )
        annotations[name] = annotation if name in required else annotation | None
    annotations["return"] = str

    def method(self: ToolEnvironment, *args: Any, **kwargs: Any) -> str:
        # Bind like a real signature would, so bad arguments fail as TypeError before any step is taken.
        bound = method.__signature__.bind(self, *args, **kwargs)
        arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
        return self._call_tool(tool, arguments)

    method.__name__ = tool.name
    method.__qualname__ = tool.name
    method.__doc__ = docstring(tool)
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)
    method.__annotations__ = annotations
    return method


def tool_env_class(
    *,
    name: str,
    tools: list[ToolSpec] | list[dict[str, Any]],
    endpoints: list[str],
    step_timeout: float = 30.0,
    reset_columns: list[str] | None = None,
    observation_fields: list[str] | None = None,
    fixed_arguments: dict[str, Any] | None = None,
    reward_rule: RewardRule | None = None,
) -> type[ToolEnvironment]:
    """Build the environment_factory class for one deployment of one environment version.

    `fixed_arguments` are a version's fixed action fields: sent with every call of a tool that has them and
    removed from what the model sees; `observation_fields` narrows what the model reads of an observation;
    `reward_rule` says how an episode's reward is read (an environment-owned one defines `get_reward`)."""
    specs = tuple(t if isinstance(t, ToolSpec) else ToolSpec.from_dict(t) for t in tools)
    if fixed_arguments:
        specs = tuple(spec.with_fixed(fixed_arguments) for spec in specs)
    if not specs:
        raise ValueError(f"{name} exposes no tools")
    if not endpoints:
        raise ValueError("an environment class needs at least one endpoint")
    bad = [t.name for t in specs if t.name.startswith("_") or t.name in {"reset", "get_reward"}]
    if bad:
        raise ValueError(f"tool names {bad} are reserved (reset, get_reward, or a leading underscore)")
    namespace: dict[str, Any] = {
        "tools": specs,
        "endpoints": tuple(endpoints),
        "step_timeout": step_timeout,
        "reset_columns": tuple(reset_columns) if reset_columns is not None else None,
        "observation_fields": tuple(observation_fields) if observation_fields is not None else None,
        "_slots": itertools.count(),
        "__doc__": f"The {name} environment over OpenEnv's WebSocket protocol.",
    }
    rule = reward_rule or RewardRule()
    namespace["reward_rule"] = rule
    if rule.kind == "environment":
        namespace["get_reward"] = _get_reward
    for spec in specs:
        namespace[spec.name] = _tool_method(spec)
    class_name = "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "Env"
    return type(class_name, (ToolEnvironment,), namespace)
