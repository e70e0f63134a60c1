"""The seven probes. Each takes a running deployment's endpoint and the version's tools and returns a result with
evidence. They talk to the server like a trainer would (OpenEnv's /ws, through envs.session); unlike a policy,
they may read `state` to find what is hidden."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from envs.mcp_tools import mcp_result
from envs.session import EnvError, EnvSession, SessionBroken
from envs.tools import ToolSpec
from envs.trust.actions import adversarial_pairs, malformed_actions, random_action

PASSED, FAILED, NOT_APPLICABLE = "passed", "failed", "not_applicable"
BOOKKEEPING = {"episode_id", "step_count"}


@dataclass
class ProbeResult:
    name: str
    status: str
    summary: str
    evidence: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProbeContext:
    endpoint: str
    tools: list[ToolSpec]
    capacity: int
    step_timeout: float = 10.0
    seed: int = 1234
    episode_steps: int = 6
    stochastic: bool = False
    observation_schema: dict[str, Any] = field(default_factory=dict)
    seeding: str = "unknown"  # what reset(seed) does, measured when the version was added (envs.measure)

    def session(self, timeout: float | None = None) -> EnvSession:
        return EnvSession(self.endpoint, timeout=timeout or self.step_timeout)


def _view(result) -> str:
    return json.dumps({"observation": result.observation, "reward": result.reward, "done": result.done},
                      sort_keys=True, default=str)  # fmt: skip


def _play(session: EnvSession, actions: list[dict]) -> list[str]:
    """Step through actions, recording what came back (errors included); stops at the end of the episode."""
    seen = []
    for action in actions:
        try:
            result = session.step(action)
        except EnvError as exc:
            seen.append(f"error {exc.code}")
            continue
        seen.append(_view(result))
        if result.done:
            break
    return seen


def _actions(ctx: ProbeContext, seed: int, n: int | None = None) -> list[dict]:
    rng = random.Random(seed)
    return [random_action(ctx.tools, rng) for _ in range(n or ctx.episode_steps)]


SEEDLESS = ("reset ignores its seed (measured when the version was added): two episodes of one seed never match, "
            "so comparing them cannot judge this")  # fmt: skip


def probe_clean_reset(ctx: ProbeContext) -> ProbeResult:
    if ctx.seeding == "ignored":
        return ProbeResult("clean_reset", NOT_APPLICABLE, SEEDLESS)
    with ctx.session() as used:
        used.reset(seed=ctx.seed)
        _play(used, _actions(ctx, ctx.seed))
        again = used.reset(seed=ctx.seed)
        state = used.state()
    with ctx.session() as fresh:
        first = fresh.reset(seed=ctx.seed)
    evidence = []
    if _view(again) != _view(first):
        evidence.append(f"reset after an episode: {_view(again)[:300]}")
        evidence.append(f"reset of a fresh session: {_view(first)[:300]}")
    if state.get("step_count", 0) != 0:
        evidence.append(f"step_count is {state.get('step_count')} right after reset")
    if evidence:
        return ProbeResult("clean_reset", FAILED, "reset does not start the episode afresh", evidence)
    return ProbeResult("clean_reset", PASSED, "reset(seed) after an episode equals a fresh session's reset(seed)")


def probe_seed_determinism(ctx: ProbeContext) -> ProbeResult:
    if ctx.seeding == "ignored":
        return ProbeResult("seed_determinism", NOT_APPLICABLE, SEEDLESS)
    actions = _actions(ctx, ctx.seed + 1)
    runs = []
    for _ in range(2):
        with ctx.session() as s:
            runs.append([_view(s.reset(seed=ctx.seed + 1)), *_play(s, actions)])
    if runs[0] == runs[1]:
        return ProbeResult("seed_determinism", PASSED, "same seed and actions gave identical observations and rewards")
    if ctx.stochastic:
        return ProbeResult("seed_determinism", NOT_APPLICABLE, "the environment declares itself stochastic")
    first_diff = next(i for i, (a, b) in enumerate(zip(*runs, strict=False)) if a != b)
    return ProbeResult("seed_determinism", FAILED, f"two identical episodes differed at step {first_diff}",
                       [runs[0][first_diff][:300], runs[1][first_diff][:300]])  # fmt: skip


def probe_session_isolation(ctx: ProbeContext, sessions: int = 4) -> ProbeResult:
    if ctx.seeding == "ignored":
        return ProbeResult("session_isolation", NOT_APPLICABLE, SEEDLESS)
    if ctx.capacity < 2:
        return ProbeResult("session_isolation", NOT_APPLICABLE,
                           f"a replica takes {ctx.capacity} session at a time: no two sessions can meet")  # fmt: skip
    n = min(sessions, ctx.capacity)
    plans = [(ctx.seed + 10 + i, _actions(ctx, ctx.seed + 10 + i)) for i in range(n)]
    interleaved: list[list[str]] = [[] for _ in range(n)]
    opened = [ctx.session() for _ in range(n)]
    try:
        for s in opened:
            s.open()
        for i, (seed, _) in enumerate(plans):
            interleaved[i].append(_view(opened[i].reset(seed=seed)))
        done = [False] * n
        for step in range(ctx.episode_steps):
            for i, (_, actions) in enumerate(plans):
                if done[i]:
                    continue
                try:
                    result = opened[i].step(actions[step])
                    interleaved[i].append(_view(result))
                    done[i] = result.done
                except EnvError as exc:
                    interleaved[i].append(f"error {exc.code}")
    finally:
        for s in opened:
            s.close()
    evidence = []
    for i, (seed, actions) in enumerate(plans):
        with ctx.session() as solo:
            alone = [_view(solo.reset(seed=seed)), *_play(solo, actions)]
        if alone != interleaved[i]:
            at = next((k for k, (a, b) in enumerate(zip(alone, interleaved[i], strict=False)) if a != b), 0)
            evidence.append(f"session {i} differs from its solo replay at step {at}: {interleaved[i][at][:200]} vs "
                            f"{alone[at][:200]}")  # fmt: skip
    if evidence:
        return ProbeResult("session_isolation", FAILED, "sessions stepped together influence each other", evidence)
    return ProbeResult("session_isolation", PASSED, f"{n} interleaved sessions each matched a solo replay")


def _reward_of(ctx: ProbeContext, seed: int, action: dict) -> tuple[float | None, str | None]:
    with ctx.session() as s:
        s.reset(seed=seed)
        try:
            result = s.step(action)
        except EnvError as exc:
            return None, exc.code
    return result.reward or 0.0, None


def probe_reward_integrity(ctx: ProbeContext) -> ProbeResult:
    rng = random.Random(ctx.seed + 2)
    evidence, checked = [], 0
    for label, attack, neutral in adversarial_pairs(ctx.tools, rng):
        for seed in (ctx.seed, ctx.seed + 3):
            attack_reward, _ = _reward_of(ctx, seed, attack)
            neutral_reward, _ = _reward_of(ctx, seed, neutral)
            checked += 1
            if attack_reward is not None and attack_reward > (neutral_reward or 0.0):
                evidence.append(f"{label}: reward {attack_reward} vs {neutral_reward} for the neutral twin")
    for label, action in malformed_actions(ctx.tools, rng):
        checked += 1
        try:
            with ctx.session(timeout=max(ctx.step_timeout, 30)) as s:
                s.reset(seed=ctx.seed)
                result = s.step(action)
            if action.get("type") == "call_tool" and mcp_result(result.observation)[1]:
                continue  # an MCP tool refuses bad arguments with a tool error, which is the right answer
            if label.endswith("oversized") and not result.reward:
                continue  # a long text is no attack when it earns nothing and the server survives it
            evidence.append(f"{label} was accepted (reward {result.reward})")
        except EnvError as exc:
            if exc.code != "VALIDATION_ERROR":
                evidence.append(f"{label} was not refused as invalid but failed with {exc.code}: {exc.message[:200]}")
        except SessionBroken as exc:
            evidence.append(f"{label} broke the session: {exc}")
    if evidence:
        return ProbeResult("reward_integrity", FAILED, "actions could earn what they did not do, or crash", evidence)
    return ProbeResult("reward_integrity", PASSED, f"{checked} adversarial and malformed actions earned nothing extra")


def _leaf_values(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaf_values(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaf_values(v, f"{path}[{i}]")]
    return [(path, value)]


def probe_hidden_state(ctx: ProbeContext, seeds: int = 5) -> ProbeResult:
    """Fields of `state` that observations do not declare are hidden; their values must never reach the policy."""
    shown_fields = set((ctx.observation_schema or {}).get("properties", {})) | {"done", "reward", "metadata"}
    leaks: dict[str, dict[int, str]] = {}
    hidden_seen: set[str] = set()
    for k in range(seeds):
        with ctx.session() as s:
            seen = [s.reset(seed=ctx.seed + 100 + k)]
            state = s.state()
            for action in _actions(ctx, ctx.seed + 100 + k, 2):
                try:
                    seen.append(s.step(action))
                except EnvError:
                    pass
        hidden = {key: v for key, v in state.items() if key not in shown_fields and key not in BOOKKEEPING}
        hidden_seen |= set(hidden)
        shown = [leaf for r in seen for leaf in _leaf_values(r.observation)]
        for key, value in hidden.items():
            for path, shown_value in shown:
                if path.split(".")[-1] == key and shown_value == value:
                    leaks.setdefault(key, {})[k] = f"observation field {path} = {shown_value!r}"
                elif (isinstance(value, str) and len(value) >= 3 and isinstance(shown_value, str)
                      and value in shown_value):  # fmt: skip
                    leaks.setdefault(key, {})[k] = f"observation field {path} contains {value!r}"
    if not hidden_seen:
        return ProbeResult("hidden_state", NOT_APPLICABLE, "the state has no fields beyond what observations show")
    # A leak shows in every seed: a hidden value equal to a shown one by chance is not a leak.
    confirmed = {key: by_seed for key, by_seed in leaks.items() if len(by_seed) == seeds}
    if confirmed:
        evidence = [f"state.{key} (hidden): {next(iter(by_seed.values()))} in every seed" for key, by_seed in
                    confirmed.items()]  # fmt: skip
        evidence.append(
            "What it means: the policy can read what it should infer, and will learn to copy it; "
            "fix: leave the hidden field out of the observation (or declare it, if it is meant to show)."
        )
        return ProbeResult("hidden_state", FAILED, "observations reveal hidden state", evidence)
    return ProbeResult("hidden_state", PASSED, f"hidden fields {sorted(hidden_seen)} never appeared in observations")


def probe_capacity(ctx: ProbeContext) -> ProbeResult:
    if ctx.capacity > 64:
        return ProbeResult("capacity", NOT_APPLICABLE, f"declared capacity {ctx.capacity} is too large to probe")
    opened, refused_at = [], None
    try:
        for i in range(ctx.capacity + 1):
            s = ctx.session()
            try:
                s.open()
                s.reset(seed=i)
                opened.append(s)
            except (EnvError, SessionBroken) as exc:
                refused_at = (i, str(exc))
                break
    finally:
        for s in opened:
            s.close()
    if refused_at is None:
        return ProbeResult("capacity", FAILED, f"the server accepted {ctx.capacity + 1} sessions but declares "
                           f"{ctx.capacity}", [f"{len(opened)} sessions open at once"])  # fmt: skip
    if refused_at[0] < ctx.capacity:
        return ProbeResult("capacity", FAILED, f"refused session {refused_at[0] + 1} of a declared {ctx.capacity}",
                           [refused_at[1]])  # fmt: skip
    return ProbeResult("capacity", PASSED, f"session {ctx.capacity + 1} refused: {refused_at[1][:120]}")


def probe_timeouts(ctx: ProbeContext) -> ProbeResult:
    slowest, evidence = 0.0, []
    with ctx.session() as s:
        s.reset(seed=ctx.seed)
        for action in _actions(ctx, ctx.seed + 5, ctx.episode_steps):
            started = time.perf_counter()
            try:
                result = s.step(action)
            except EnvError:
                continue
            except SessionBroken as exc:
                evidence.append(f"{json.dumps(action)[:120]}: {exc}")
                break
            slowest = max(slowest, time.perf_counter() - started)
            if result.done:
                s.reset(seed=ctx.seed)
    if evidence:
        return ProbeResult("timeouts", FAILED, f"a step ran past the {ctx.step_timeout:g} s limit and was cut off",
                           evidence)  # fmt: skip
    return ProbeResult("timeouts", PASSED, f"slowest step {slowest * 1e3:.1f} ms, within {ctx.step_timeout:g} s")


PROBES = [probe_clean_reset, probe_seed_determinism, probe_session_isolation, probe_reward_integrity,
          probe_hidden_state, probe_capacity, probe_timeouts]  # fmt: skip


def run_probes(ctx: ProbeContext, progress=lambda name, i, n: None) -> list[ProbeResult]:
    results = []
    for i, probe in enumerate(PROBES):
        name = probe.__name__.removeprefix("probe_")
        progress(name, i, len(PROBES))
        try:
            results.append(probe(ctx))
        except SessionBroken as exc:
            results.append(ProbeResult(name, FAILED, "the probe's session broke", [str(exc)]))
        except EnvError as exc:
            results.append(ProbeResult(name, FAILED, "the server refused a valid request", [str(exc)]))
    return results
