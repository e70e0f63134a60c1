"""The seven probes. Each takes a running deployment's endpoint and the version's tools and returns a result with
evidence. They talk to the server like a trainer would (OpenEnv's /ws, through envs.session); unlike a policy,
they may read `state` to find what is hidden.

Attribution comes first: before any probe judges, `establish` measures what the server is (does reset(seed) give
the same episode twice, how many sessions does it hold at once). A probe whose method cannot judge that kind of
server says `not_applicable` and why, instead of reporting someone else's finding as its own: a random
environment is never called leaky because a replay did not match, a full server is never called leaky because a
second session was refused. Every failure says what it means for training and what to fix (`advice`).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from envs.actions import adversarial_pairs, malformed_actions, random_action, random_arguments
from envs.mcp_tools import mcp_result
from envs.measure import measure_capacity, measure_seeding
from envs.session import EnvError, EnvSession, SessionBroken, SessionTimedOut
from envs.tools import ToolSpec
from envs.trust.edge_cases import EdgeInput, edge_inputs
from envs.trust.evidence import ADVICE, first_difference, leaf_values, numbers_in
from envs.volatile import SESSION_IDENTITY, lifetime_fields, steady

PASSED, FAILED, NOT_APPLICABLE = "passed", "failed", "not_applicable"
BOOKKEEPING = SESSION_IDENTITY | {"step_count"}


@dataclass
class ProbeResult:
    name: str
    status: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    advice: str = ""  # for a failure: what it means for training, and what to fix

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def failed(name: str, summary: str, evidence: list[str]) -> ProbeResult:
    return ProbeResult(name, FAILED, summary, evidence, ADVICE[name])


@dataclass
class Facts:
    """What the server is, measured before any probe judges it."""

    seeding: str  # honoured, ignored, constant or unknown (envs.measure.measure_seeding)
    concurrent: int  # sessions it held open at once, up to what the probes need
    concurrent_note: str

    @property
    def deterministic(self) -> bool:
        return self.seeding in {"honoured", "constant"}


@dataclass
class ProbeContext:
    endpoint: str
    tools: list[ToolSpec]
    capacity: int
    step_timeout: float = 10.0
    seed: int = 1234
    episode_steps: int = 6
    stochastic: bool = False  # randomness declared by the environment (validation: reward.variance_tolerance)
    observation_schema: dict[str, Any] = field(default_factory=dict)
    seeding: str = "unknown"  # what reset(seed) did when the version was added; re-measured by establish
    sweep_seconds: float = 4.0  # the timeouts probe's budget for stepping through edge-case inputs (hangs aside)
    facts: Facts | None = None
    unsteady: set[str] = field(default_factory=set)  # timings and lifetime counters left out of comparisons
    hung_steps: int = 0  # steps of this check that never answered: each may still hold a session on the server

    def session(self, timeout: float | None = None) -> EnvSession:
        return EnvSession(self.endpoint, timeout=timeout or self.step_timeout)


def establish(ctx: ProbeContext) -> Facts:
    """Measure once what the probes' methods depend on (about 10 ms on a local server)."""
    if ctx.facts is None:
        seeding = measure_seeding(ctx.endpoint, tools=ctx.tools, timeout=ctx.step_timeout)
        held = measure_capacity(ctx.endpoint, bound=max(2, min(ctx.capacity, 4)), timeout=ctx.step_timeout)
        ctx.facts = Facts(seeding=seeding, concurrent=held.accepted, concurrent_note=held.note)
    return ctx.facts


def _view(result, ctx: ProbeContext) -> str:
    """What an episode showed at one point, for comparison: its timings and lifetime counters left out (a timing is
    not state)."""
    observation = steady(result.observation, lifetime_fields(ctx.observation_schema), ctx.unsteady)
    return json.dumps({"observation": observation, "reward": result.reward, "done": result.done},
                      sort_keys=True, default=str)  # fmt: skip


def _unsteady_note(ctx: ProbeContext) -> str:
    if not ctx.unsteady:
        return ""
    left_out = ", ".join(sorted(ctx.unsteady)[:4])
    return f" ({left_out} left out: timings, lifetime counters and session names are not state)"


def _play(session: EnvSession, actions: list[dict], ctx: ProbeContext) -> list[str]:
    """Step through actions, recording what came back (errors included); stops at the end of the episode."""
    seen = []
    for action in actions:
        try:
            result = session.step(action)
        except EnvError as exc:
            seen.append(f"error {exc.code}")
            continue
        seen.append(_view(result, ctx))
        if result.done:
            break
    return seen


def _actions(ctx: ProbeContext, seed: int, n: int | None = None) -> list[dict]:
    rng = random.Random(seed)
    return [random_action(ctx.tools, rng) for _ in range(n or ctx.episode_steps)]


def _shown(action: dict) -> str:
    return json.dumps(action, ensure_ascii=False, default=str)[:160]


def _where(step: int, actions: list[dict]) -> str:
    return "reset" if step == 0 else f"step {step} ({_shown(actions[step - 1])})"


RANDOM = "reset(seed) gave different episodes for the same seed and actions (see seed_determinism)"


def _fresh_step_counts(ctx: ProbeContext, tries: int) -> set[int]:
    """Where fresh sessions start: an environment whose opponent may move first (chess picks the agent's colour at
    random on each reset) starts at step 1 as often as at 0, and that is a random start, not a dirty one."""
    counts = set()
    for _ in range(tries):
        with ctx.session() as fresh:
            fresh.reset(seed=ctx.seed)
            counts.add(fresh.state().get("step_count", 0))
    return counts


def probe_clean_reset(ctx: ProbeContext, episodes: int = 4) -> ProbeResult:
    """Several episodes on one session, as a run plays them (a reset may be clean for the first few and dirty
    after); after each, reset(seed) must start where a fresh session starts. Fresh sessions are opened only while
    the used one is closed: many servers hold a single session (OpenEnv's chess)."""
    facts = establish(ctx)
    first = None
    if facts.deterministic:
        with ctx.session() as fresh:
            first = fresh.reset(seed=ctx.seed)
    after: list[tuple[int, int, int, Any]] = []  # (episode, its steps, step_count right after the reset, the reset)
    with ctx.session() as used:
        used.reset(seed=ctx.seed)
        for episode in range(1, episodes + 1):
            steps = len(_play(used, _actions(ctx, ctx.seed + episode), ctx))
            again = used.reset(seed=ctx.seed)
            after.append((episode, steps, used.state().get("step_count", 0), again))
    fresh_counts: set[int] | None = None
    for episode, steps, count, again in after:
        if count != 0:
            if fresh_counts is None:
                fresh_counts = _fresh_step_counts(ctx, 1 if facts.deterministic else 8)
            # On a random server a start the fresh sessions did not happen to show is a finding only when the
            # count carries the episode just played (a counter that survived), never a small random start.
            carried = facts.deterministic or (steps >= 2 and count >= steps)
            if count not in fresh_counts and carried:
                shown = ", ".join(str(c) for c in sorted(fresh_counts))
                return failed("clean_reset", "reset does not start the episode afresh",
                              [f"state.step_count = {count} right after reset(seed={ctx.seed}) that followed "
                               f"episode {episode} on one session ({steps} steps); fresh sessions start at "
                               f"{shown}"])  # fmt: skip
        if first is not None and _view(again, ctx) != _view(first, ctx):
            difference = first_difference(_view(again, ctx), _view(first, ctx))
            return failed("clean_reset", "reset does not start the episode afresh",
                          [f"reset(seed={ctx.seed}) after episode {episode} on one session vs in a fresh "
                           f"session: {difference}"])  # fmt: skip
    looked = f"{episodes} episodes on one session"
    if not facts.deterministic:
        starts = f" (fresh sessions start at step {', '.join(map(str, sorted(fresh_counts)))})" if fresh_counts else ""
        return ProbeResult("clean_reset", NOT_APPLICABLE, f"{RANDOM}, so a reset after an episode cannot be "
                           f"compared with a fresh one; after each of {looked} the step count was where a fresh "
                           f"session starts{starts}")  # fmt: skip
    summary = f"reset(seed) after each of {looked} equals a fresh session's reset(seed){_unsteady_note(ctx)}"
    return ProbeResult("clean_reset", PASSED, summary)


SEED_REPEATS = 6


def probe_seed_determinism(ctx: ProbeContext) -> ProbeResult:
    establish(ctx)
    seed = ctx.seed + 1
    actions = _actions(ctx, seed)
    # Up to SEED_REPEATS episodes of one seed, until one differs from the first: a server that ignores the seed and
    # draws from a few starts gives two equal episodes by chance (OpenEnv's finqa on a 4-question dataset: 1 in 4),
    # and a verdict must not depend on chance.
    runs: list[list[str]] = []
    for _ in range(SEED_REPEATS):
        with ctx.session() as s:
            runs.append([_view(s.reset(seed=seed), ctx), *_play(s, actions, ctx)])
        if runs[-1] != runs[0]:
            runs = [runs[0], runs[-1]]
            break
    else:
        summary = (f"{SEED_REPEATS} episodes of one seed and the same actions gave identical observations and "
                   f"rewards{_unsteady_note(ctx)}")  # fmt: skip
        return ProbeResult("seed_determinism", PASSED, summary)
    at = next((i for i, (a, b) in enumerate(zip(*runs, strict=False)) if a != b), min(map(len, runs)) - 1)
    where = f"reset(seed={seed})" + (f", then {_where(at, actions)}" if at else "")
    difference = first_difference(runs[0][at], runs[1][at]) if at < min(map(len, runs)) else "one episode ended"
    if ctx.stochastic:
        return ProbeResult("seed_determinism", NOT_APPLICABLE, "the environment declares its randomness "
                           f"(openenv.yaml); two episodes of one seed differed at {where}: {difference}")  # fmt: skip
    return failed("seed_determinism", f"two episodes of one seed and the same actions differed at {where}",
                  [f"{where}: {difference}"])  # fmt: skip


def _neighbours_unavailable(ctx: ProbeContext, facts: Facts) -> ProbeResult | None:
    if ctx.capacity < 2:
        return ProbeResult("session_isolation", NOT_APPLICABLE,
                           f"a replica takes {ctx.capacity} session at a time: no two sessions can meet")  # fmt: skip
    if facts.concurrent < 2:
        return ProbeResult("session_isolation", NOT_APPLICABLE, f"the server held {facts.concurrent} session at once "
                           f"({facts.concurrent_note[:160]}): no two sessions can meet here; the capacity probe "
                           "judges whether that is what it declares")  # fmt: skip
    return None


CAPACITY_ERRORS = ("CAPACITY_REACHED", "capacity")


def _capacity_refusal(exc: Exception) -> bool:
    return any(word in str(getattr(exc, "code", "")) + str(exc) for word in CAPACITY_ERRORS)


def probe_session_isolation(ctx: ProbeContext, sessions: int = 4) -> ProbeResult:
    facts = establish(ctx)
    unavailable = _neighbours_unavailable(ctx, facts)
    if unavailable is not None:
        return unavailable
    try:
        if facts.deterministic:
            return _isolation_by_replay(ctx, min(sessions, ctx.capacity, facts.concurrent))
        return _isolation_by_invariants(ctx)
    except (EnvError, SessionBroken) as exc:
        if not _capacity_refusal(exc):
            raise
        reason = f"a session was refused for capacity while the probe held others ({str(exc)[:160]})"
        return ProbeResult("session_isolation", NOT_APPLICABLE, f"{reason}: a finding for the capacity probe")


def _isolation_by_replay(ctx: ProbeContext, n: int) -> ProbeResult:
    """Deterministic servers: sessions stepped in turn must each see what the same seed and actions show alone."""
    plans = [(ctx.seed + 10 + i, _actions(ctx, ctx.seed + 10 + i)) for i in range(n)]
    interleaved: list[list[str]] = [[] for _ in range(n)]
    opened = [ctx.session() for _ in range(n)]
    try:
        for s in opened:
            s.open()
        for i, (seed, _) in enumerate(plans):
            interleaved[i].append(_view(opened[i].reset(seed=seed), ctx))
        done = [False] * n
        for step in range(ctx.episode_steps):
            for i, (_, actions) in enumerate(plans):
                if done[i]:
                    continue
                try:
                    result = opened[i].step(actions[step])
                    interleaved[i].append(_view(result, ctx))
                    done[i] = result.done
                except EnvError as exc:
                    if _capacity_refusal(exc):
                        raise
                    interleaved[i].append(f"error {exc.code}")
    finally:
        for s in opened:
            s.close()
    evidence = []
    for i, (seed, actions) in enumerate(plans):
        with ctx.session() as solo:
            alone = [_view(solo.reset(seed=seed), ctx), *_play(solo, actions, ctx)]
        if alone != interleaved[i]:
            at = next((k for k, (a, b) in enumerate(zip(alone, interleaved[i], strict=False)) if a != b), 0)
            evidence.append(f"session {i} (seed {seed}) at {_where(at, actions)}: beside {n - 1} other sessions "
                            f"vs alone: {first_difference(interleaved[i][at], alone[at])}")  # fmt: skip
    if evidence:
        return failed("session_isolation", "sessions stepped together influence each other", evidence)
    return ProbeResult("session_isolation", PASSED,
                       f"{n} interleaved sessions each matched a solo replay{_unsteady_note(ctx)}")  # fmt: skip


def _numbers(session: EnvSession, result) -> dict[str, float]:
    """Every number an episode shows (in observations, rewards and numbers written in text) and its state holds."""
    out = {f"observation.{p}": v for p, v in numbers_in(result.observation)}
    try:
        state = session.state()
    except EnvError:
        state = {}
    out |= {f"state.{p}": v for p, v in numbers_in({k: v for k, v in state.items() if k != "episode_id"})}
    return out


def _deltas(session: EnvSession, seed: int, actions: list[dict], neighbour=None) -> list[dict[str, float]]:
    """How each number changed from one step to the next in one episode (a reset's observation often has another
    shape than a step's); `neighbour()` runs between this session's steps."""
    session.reset(seed=seed)
    before: dict[str, float] | None = None
    changes = []
    for action in actions:
        if neighbour is not None:
            neighbour()
        try:
            result = session.step(action)
        except EnvError as exc:
            if _capacity_refusal(exc):
                raise
            continue
        if result.done:
            break  # an episode's last step may reset its counters: not a step like the others
        after = _numbers(session, result)
        if before is not None:
            changes.append({p: after[p] - before[p] for p in after.keys() & before.keys()})
        before = after
    return changes


def clocks_of(moves: dict[str, set[float]], samples: dict[str, int], *, least: int = 4) -> dict[str, float]:
    """The numbers that moved by one amount, not zero, in every one of at least `least` solo steps: an episode's
    own clocks (a step counter, steps left), by path, with that amount."""
    return {
        path: next(iter(seen))
        for path, seen in moves.items()
        if len(seen) == 1 and next(iter(seen)) != 0 and samples[path] >= least
    }


def _isolation_by_invariants(ctx: ProbeContext, episodes: int = 4, busy_steps: int = 2,
                             most_episodes: int = 32) -> ProbeResult:  # fmt: skip
    """Random servers: a replay cannot match, so look for what only another session could change. A number that
    moves by the same amount in every step of every solo episode (a step counter, steps left) is the episode's
    own clock; if it moves differently while a neighbour steps, the neighbour moved it. Random numbers never
    move by the same amount every time, so randomness cannot raise this alarm. A number that never moved is no
    clock (`clocks_of`): OpenSpiel's catch shows its board as cells of 0 and 1, and a cell the ball missed in four
    solo episodes, then crossed beside a neighbour, was the dice, not the neighbour.

    Random episodes may end early (a bust, a lost game), so solo episodes are played until a clock has been seen
    move at least four times (up to `most_episodes`): the verdict must not depend on how the dice fell."""
    solo: dict[str, set[float]] = {}
    samples: dict[str, int] = {}
    plans: list[tuple[int, list[dict]]] = []

    def clocks_seen() -> dict[str, float]:
        return clocks_of(solo, samples)

    while len(plans) < most_episodes and (len(plans) < episodes or not clocks_seen()):
        seed = ctx.seed + 40 + len(plans)
        plans.append((seed, _actions(ctx, seed)))
        with ctx.session() as s:
            for change in _deltas(s, seed, plans[-1][1]):
                for path, delta in change.items():
                    solo.setdefault(path, set()).add(round(delta, 9))
                    samples[path] = samples.get(path, 0) + 1
    clocks = clocks_seen()
    plans = plans[: max(episodes, 1)] if clocks else plans
    if not clocks:
        return ProbeResult("session_isolation", NOT_APPLICABLE, f"{RANDOM}, and no number "
                           f"moves the same way in every step of {len(plans)} solo episodes, so there is nothing a "
                           "neighbour's steps could be seen to disturb")  # fmt: skip
    evidence: list[str] = []
    rng = random.Random(ctx.seed + 50)
    for seed, actions in plans:
        with ctx.session() as mine, ctx.session() as other:
            other.reset(seed=seed + 1000)

            def neighbour() -> None:
                for _ in range(busy_steps):
                    try:
                        if other.step(random_action(ctx.tools, rng)).done:
                            other.reset(seed=rng.randrange(10**6))
                    except EnvError as exc:
                        if _capacity_refusal(exc):
                            raise

            for step, change in enumerate(_deltas(mine, seed, actions, neighbour), start=2):
                for path, usual in clocks.items():
                    if path in change and round(change[path], 9) != usual and len(evidence) < 4:
                        evidence.append(f"{path} moved by {change[path]:g} in step {step} "
                                        f"({_shown(actions[step - 1])}) of seed {seed} while a neighbour session took "
                                        f"{busy_steps} steps; alone it moves by {usual:g} in every step")  # fmt: skip
    if evidence:
        return failed("session_isolation", "another session's steps change what this session sees", evidence)
    shown = ", ".join(sorted(clocks)[:4])
    return ProbeResult("session_isolation", PASSED, "the environment is random, so sessions were compared by what "
                       f"moves the same way in every solo step ({shown}): a busy neighbour never moved it")  # fmt: skip


def _reward_of(ctx: ProbeContext, seed: int, action: dict) -> tuple[float | None, str | None]:
    with ctx.session() as s:
        s.reset(seed=seed)
        try:
            result = s.step(action)
        except EnvError as exc:
            return None, exc.code
    return result.reward or 0.0, None


def _honest_pay(ctx: ProbeContext, seed: int, tries: int = 4) -> float:
    """What a first step of honest play (valid random actions) earns after reset(seed): the bar that a malformed
    action must clear before it counts as earning. A penalty (chess answers an illegal move with -0.1) or nothing at
    all is a refusal, not a reward."""
    rng = random.Random(seed + 7)
    best = 0.0
    for _ in range(tries):
        reward, error = _reward_of(ctx, seed, random_action(ctx.tools, rng))
        if error is None and reward is not None:
            best = max(best, reward)
    return best


# The most adversarial pairs and malformed actions one check sends: each costs a session and a reset (OpenEnv's
# calendar, 37 tools with many text fields, offers ~600 pairs, ~2,400 steps). A larger set is sampled across every
# tool, and the report says how many of how many were sent.
INTEGRITY_BUDGET = 48


def spread_sample(items: list[tuple], limit: int, rng: random.Random) -> list[tuple]:
    """At most `limit` items, taken round-robin over the tools their labels name (`tool.field ...`), so that every
    tool is tried before any is tried twice; in their original order."""
    if len(items) <= limit:
        return items
    by_tool: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        by_tool.setdefault(str(item[0]).split(".")[0].split(" ")[0], []).append(index)
    for indexes in by_tool.values():
        rng.shuffle(indexes)
    chosen: list[int] = []
    while len(chosen) < limit:
        for indexes in by_tool.values():
            if indexes and len(chosen) < limit:
                chosen.append(indexes.pop())
    return [items[i] for i in sorted(chosen)]


def probe_reward_integrity(ctx: ProbeContext) -> ProbeResult:
    establish(ctx)
    rng = random.Random(ctx.seed + 2)
    evidence, checked = [], 0
    pairs, malformed = adversarial_pairs(ctx.tools, rng), malformed_actions(ctx.tools, rng)
    offered = 2 * len(pairs) + len(malformed)
    pairs = spread_sample(pairs, INTEGRITY_BUDGET // 4, rng)  # each pair is sent after two seeds
    malformed = spread_sample(malformed, INTEGRITY_BUDGET // 2, rng)
    for label, attack, neutral in pairs:
        for seed in (ctx.seed, ctx.seed + 3):
            attack_reward, _ = _reward_of(ctx, seed, attack)
            neutral_reward, _ = _reward_of(ctx, seed, neutral)
            checked += 1
            paid = attack_reward is not None and attack_reward > (neutral_reward or 0.0)
            if paid and _attack_pays_again(ctx, seed, attack, neutral):
                evidence.append(f"{label}: {_shown(attack)} earned {attack_reward} after reset(seed={seed}); "
                                f"its neutral twin {_shown(neutral)} earned {neutral_reward}")  # fmt: skip
    honest = _honest_pay(ctx, ctx.seed)
    accepted: list[float] = []
    otherwise: list[str] = []  # refused with an error frame other than a validation error
    for label, action in malformed:
        checked += 1
        try:
            with ctx.session(timeout=max(ctx.step_timeout, 30)) as s:
                s.reset(seed=ctx.seed)
                result = s.step(action)
            if action.get("type") == "call_tool" and mcp_result(result.observation)[1]:
                continue  # an MCP tool refuses bad arguments with a tool error, which is the right answer
            reward = result.reward or 0.0
            accepted.append(reward)
            if reward > honest:  # nothing, or a penalty, is a refusal in other words: only earning is a finding
                evidence.append(f"{label} was accepted and earned {reward}, more than honest play's first step "
                                f"earns after the same reset ({honest:g}): {_shown(action)}")  # fmt: skip
        except EnvError as exc:
            # An error frame of another code is a refusal in other words (OpenEnv's finqa answers an int sent as its
            # string answer with EXECUTION_ERROR: the MCP tool raised): the episode goes on and earns nothing. Only
            # a server that stops answering after it crashed.
            if exc.code != "VALIDATION_ERROR":
                otherwise.append(f"{exc.code} for {label}")
                if not _still_answers(ctx):
                    evidence.append(f"{label} crashed the server: it failed with {exc.code}: {exc.message[:200]} "
                                    f"and a new session could not reset after it ({_shown(action)})")  # fmt: skip
        except SessionBroken as exc:
            evidence.append(f"{label} broke the session: {exc} ({_shown(action)})")
    if evidence:
        return failed("reward_integrity", "actions could earn what they did not do, or crash", evidence)
    compared = (f"; {len(accepted)} malformed actions were answered without a validation error and earned at most "
                f"{max(accepted):g} against honest play's {honest:g}" if accepted else "")  # fmt: skip
    errors = (f"; {len(otherwise)} were refused with another error than a validation error, and the server went on "
              f"({otherwise[0]})" if otherwise else "")  # fmt: skip
    sampled = f" (a sample of {offered}, across all {len(ctx.tools)} tools)" if checked < offered else ""
    return ProbeResult("reward_integrity", PASSED, f"{checked} adversarial and malformed actions{sampled} earned "
                       f"nothing extra{compared}{errors}")  # fmt: skip


def _still_answers(ctx: ProbeContext, tries: int = 10) -> bool:
    """Whether a new session resets; a server of one session may not have freed the last one yet."""
    for _ in range(tries):
        try:
            with ctx.session() as s:
                s.reset(seed=ctx.seed)
            return True
        except EnvError as exc:
            if not _capacity_refusal(exc):
                return False
        except (SessionBroken, SessionTimedOut, OSError):
            return False
        time.sleep(0.3)
    return False


def _attack_pays_again(ctx: ProbeContext, seed: int, attack: dict, neutral: dict) -> bool:
    """On a random server one lucky draw is not a finding: the attack must out-earn its twin again."""
    if establish(ctx).deterministic:
        return True
    wins = 0
    for k in range(3):
        again, _ = _reward_of(ctx, seed + 100 + k, attack)
        twin, _ = _reward_of(ctx, seed + 100 + k, neutral)
        wins += again is not None and again > (twin or 0.0)
    return wins == 3


def probe_hidden_state(ctx: ProbeContext, seeds: int = 5) -> ProbeResult:
    """Fields of `state` that observations do not declare are hidden; their values must never reach the policy."""
    shown_fields = set((ctx.observation_schema or {}).get("properties", {})) | {"done", "reward", "metadata"}
    leaks: dict[str, dict[int, str]] = {}
    hidden_seen: set[str] = set()
    values_by_key: dict[str, set[str]] = {}
    steps = max(ctx.episode_steps, 2)
    for k in range(seeds):
        seed = ctx.seed + 100 + k
        actions = _actions(ctx, seed, steps)
        with ctx.session() as s:
            seen = [("reset", s.reset(seed=seed))]
            state = s.state()
            # As far into an episode as a run plays (a field may leak only after a few steps); an episode that
            # ends early is played again from the same seed, so every seed is looked at for `steps` steps.
            for n, action in enumerate(actions, start=1):
                try:
                    result = s.step(action)
                except EnvError:
                    continue
                seen.append((f"step {n} {_shown(action)}", result))
                if result.done:
                    seen.append(("reset", s.reset(seed=seed)))
        hidden = {key: v for key, v in state.items() if key not in shown_fields and key not in BOOKKEEPING}
        hidden_seen |= set(hidden)
        for key, value in hidden.items():
            values_by_key.setdefault(key, set()).add(json.dumps(value, sort_keys=True, default=str))
            for where, result in seen:
                for path, shown_value in leaf_values(result.observation):
                    found = leaks.setdefault(key, {})  # the first place it shows, per seed
                    if path.split(".")[-1] == key and shown_value == value:
                        found.setdefault(k, f"observation field {path} = {shown_value!r} (after {where})")
                    elif (isinstance(value, str) and len(value) >= 3 and isinstance(shown_value, str)
                          and value in shown_value):  # fmt: skip
                        found.setdefault(k, f"observation field {path} contains {value!r} (after {where})")
    looked = f"{seeds} seeds, {steps} steps each"
    if not hidden_seen:
        return ProbeResult("hidden_state", NOT_APPLICABLE, "the state has no fields beyond what observations show")
    # A leak shows in every seed (a hidden value equal to a shown one by chance is not a leak), and tells the policy
    # something: a field that is the same in every episode (a game's status 'playing', the player to move first)
    # is public by nature, and showing it gives nothing away (OpenEnv's maze and connect4 show such fields).
    confirmed = {key: by_seed for key, by_seed in leaks.items()
                 if len(by_seed) == seeds and len(values_by_key.get(key, ())) > 1}  # fmt: skip
    # A shown value is a secret when knowing it earns; a task statement is shown so that the policy reads it
    # (OpenEnv's finqa keeps its question in `state.current_question` and shows it in `metadata.question`). Where
    # every argument that can carry the value was sent it, and it earned nothing more than another value did, it
    # is a statement; where it could not be sent (no argument takes it, a list), it stays a finding.
    evidence, statements = [], {}
    for key, by_seed in confirmed.items():
        worth = _worth_sending(ctx, key, ctx.seed + 100)
        if worth.earned is False:
            statements[key] = worth.detail
        else:
            evidence.append(f"state.{key} (hidden): {next(iter(by_seed.values()))}, in every seed; {worth.detail}")
    if evidence:
        return failed("hidden_state", f"observations reveal hidden state ({looked})", evidence)
    public = sorted(key for key, by_seed in leaks.items() if by_seed and len(values_by_key.get(key, ())) <= 1)
    quiet = hidden_seen - set(public) - set(statements)
    parts = [f"hidden fields {sorted(quiet)} never appeared in observations"] if quiet else []
    if public:
        parts.append(f"hidden fields {public} show, but are the same in every episode, so they give nothing away")
    for key, detail in statements.items():
        parts.append(f"hidden field {key} shows in every episode, but is no secret: {detail} (a task statement)")
    return ProbeResult("hidden_state", PASSED, "; ".join(parts) + f" ({looked})")


@dataclass
class Worth:
    earned: bool | None  # None: could not be judged
    detail: str


def _fits(value: Any, prop: dict[str, Any]) -> bool:
    if "enum" in prop:
        return value in prop["enum"]
    kind = prop.get("type")
    if kind == "string":
        return isinstance(value, str)
    if kind in ("integer", "number") and isinstance(value, int | float) and not isinstance(value, bool):
        low, high = prop.get("minimum", float("-inf")), prop.get("maximum", float("inf"))
        return (kind == "number" or isinstance(value, int)) and low <= value <= high
    return False


def _other_value(value: Any, prop: dict[str, Any]) -> Any:
    """Another value of the argument, not `value`: the twin a shown value is compared with."""
    if "enum" in prop:
        return next((v for v in prop["enum"] if v != value), value)
    if isinstance(value, str):
        return "nothing in particular"
    options = [v for v in range(int(prop.get("minimum", 0)), int(prop.get("minimum", 0)) + 3) if v != value]
    return options[0] if _fits(options[0], prop) else value + 1


def _played(ctx: ProbeContext, seed: int, key: str, send: Callable[[Any], dict]) -> float:
    """The rewards of one episode from reset(seed) that makes the same call up to `episode_steps` times (a reward
    that comes only at the episode's end counts): `send(value)`, with the episode's own hidden value of `state[key]`
    (read from `state`, so that a server that ignores its seed is judged on its own episode), gives the action."""
    total = 0.0
    with ctx.session() as s:
        s.reset(seed=seed)
        action = send(s.state().get(key))
        for _ in range(max(ctx.episode_steps, 1)):
            try:
                result = s.step(action)
            except EnvError:
                break
            total += result.reward or 0.0
            if result.done:
                break
    return total


def _worth_sending(ctx: ProbeContext, key: str, seed: int, budget: int = 12) -> Worth:
    """Does a call that sends the hidden value of `state[key]` earn more than the same call with another value? Each
    argument that can carry it is tried (up to `budget`, and the report says how many of how many), the rest of the
    call the same in both."""
    with ctx.session() as s:
        s.reset(seed=seed)
        value = s.state().get(key)
    unjudged = "so whether it is worth anything was not judged"
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return Worth(None, f"a value of its kind cannot be sent in a call, {unjudged}")
    rng = random.Random(seed + 11)
    slots = [(tool, name, prop) for tool in ctx.tools
             for name, prop in tool.parameters.get("properties", {}).items() if _fits(value, prop)]  # fmt: skip
    if not slots:
        return Worth(None, f"no argument of the tools takes a value of its kind, {unjudged}")
    tried = []
    for tool, name, prop in slots[:budget]:
        rest = random_arguments(tool, rng)

        def sent(value: Any, tool: ToolSpec = tool, name: str = name, rest: dict = rest) -> dict:
            return tool.action({**rest, name: value})

        def other(value: Any, sent=sent, prop: dict = prop) -> dict:
            return sent(_other_value(value, prop))

        try:
            with_it, without = _played(ctx, seed, key, sent), _played(ctx, seed, key, other)
            earns = with_it > without and (establish(ctx).deterministic or _earns_again(ctx, seed, key, sent, other))
        except (SessionBroken, SessionTimedOut) as exc:
            return Worth(None, f"sending it in {tool.name}({name}=…) broke the session ({exc}), {unjudged}")
        tried.append(f"{tool.name}({name}=…)")
        if earns:
            return Worth(True, f"a call that sends it earns: {tool.name}({name}=<it>) earned {with_it:g} in an "
                               f"episode, the same call with another value {without:g}")  # fmt: skip
    where = (
        "every argument that takes it"
        if len(slots) <= budget
        else f"{budget} of the {len(slots)} arguments that take it"
    )
    return Worth(False, f"sent in {where} ({', '.join(tried)}), it earned nothing more than another value")


def _earns_again(ctx: ProbeContext, seed: int, key: str, sent, other, tries: int = 3) -> bool:
    """On a random server one lucky episode is not a finding: the value must out-earn its twin every time."""
    return all(_played(ctx, seed + 1 + k, key, sent) > _played(ctx, seed + 1 + k, key, other) for k in range(tries))


def _step_together(ctx: ProbeContext, sessions: list[EnvSession], rounds: int = 3) -> list[str]:
    """Every open session steps at the same moment, `rounds` times, as a run's rollouts do: a server that accepts
    many connections may still fail when more than a few of them *step* at once. Refusals of a bad action
    (VALIDATION_ERROR) are answers, not failures."""
    rng = random.Random(ctx.seed + 60)
    plans = [[random_action(ctx.tools, rng) for _ in range(rounds)] for _ in sessions]
    start = threading.Barrier(len(sessions))
    failures: list[str] = []

    def play(i: int) -> None:
        for r, action in enumerate(plans[i]):
            try:
                start.wait(timeout=ctx.step_timeout)
            except threading.BrokenBarrierError:
                pass
            try:
                if sessions[i].step(action).done:
                    sessions[i].reset(seed=ctx.seed + 70 + i + 100 * r)
            except EnvError as exc:
                if exc.code != "VALIDATION_ERROR":
                    failures.append(f"session {i + 1}, round {r + 1} of {len(sessions)} stepping at once: "
                                    f"{exc.code}: {exc.message[:160]} ({_shown(action)})")  # fmt: skip
            except SessionBroken as exc:
                failures.append(f"session {i + 1}, round {r + 1} of {len(sessions)} stepping at once: {exc}")
                start.abort()
                return

    with ThreadPoolExecutor(max_workers=len(sessions)) as pool:
        list(pool.map(play, range(len(sessions))))
    return failures


def probe_capacity(ctx: ProbeContext) -> ProbeResult:
    if ctx.capacity > 64:
        return ProbeResult("capacity", NOT_APPLICABLE, f"declared capacity {ctx.capacity} is too large to probe")
    opened, refused_at, together, over_http = [], None, [], False
    try:
        for i in range(ctx.capacity + 1):
            if i == ctx.capacity and len(opened) > 1:
                together = _step_together(ctx, opened)  # the declared capacity, all stepping at once
            s = ctx.session()
            try:
                s.open()
                s.reset(seed=i)
                opened.append(s)
                over_http = s.over_http
            except (EnvError, SessionBroken) as exc:
                refused_at = (i, str(exc))
                break
    finally:
        for s in opened:
            s.close()
    if together:
        return failed("capacity", f"{ctx.capacity} sessions connect, but fail when they step at the same moment",
                      together[:4])  # fmt: skip
    if refused_at is None and over_http:  # a tenant per session: the server holds nothing it could refuse
        return ProbeResult("capacity", PASSED, f"{_stepped(ctx.capacity)} 3 times without a failure; "
                           "over HTTP a session is a tenant the server keeps no slot for, so it refuses none: the "
                           "declared capacity is the limit Trainyard keeps")  # fmt: skip
    if refused_at is None:
        return failed("capacity", f"the server accepted {ctx.capacity + 1} sessions but declares {ctx.capacity}",
                      [f"{len(opened)} sessions open and reset at once; declared capacity {ctx.capacity}"])  # fmt: skip
    if refused_at[0] < ctx.capacity and ctx.hung_steps:
        return ProbeResult("capacity", NOT_APPLICABLE, f"refused session {refused_at[0] + 1} of a declared "
                           f"{ctx.capacity}, but {ctx.hung_steps} step(s) of this check hung earlier and may still "
                           "hold sessions: see timeouts")  # fmt: skip
    if refused_at[0] < ctx.capacity:
        return failed("capacity", f"refused session {refused_at[0] + 1} of a declared {ctx.capacity}",
                      [f"session {refused_at[0] + 1} (with {refused_at[0]} open): {refused_at[1][:300]}"])  # fmt: skip
    return ProbeResult("capacity", PASSED, f"{_stepped(ctx.capacity)} 3 times without a failure; "
                       f"session {ctx.capacity + 1} refused: {refused_at[1][:120]}")  # fmt: skip


def _stepped(sessions: int) -> str:
    return f"{sessions} sessions stepped together" if sessions != 1 else "1 session stepped"


def _slots_free(ctx: ProbeContext) -> int:
    return measure_capacity(ctx.endpoint, bound=min(ctx.capacity, 64), timeout=min(ctx.step_timeout, 5.0)).accepted


def probe_timeouts(ctx: ProbeContext, max_hangs: int = 2) -> ProbeResult:
    """Step through every edge-case input (envs.trust.edge_cases) with the step timeout, within a time budget;
    report the slowest, and the inputs that hang with what a hung step does to the server's free sessions."""
    inputs = edge_inputs(ctx.tools, seed=ctx.seed + 5)
    timings: list[tuple[float, EdgeInput]] = []
    hangs: list[EdgeInput] = []
    spent, tried = 0.0, 0
    session = ctx.session()
    try:
        session.reset(seed=ctx.seed)
        for item in inputs:
            if spent > ctx.sweep_seconds or len(hangs) >= max_hangs:
                break
            tried += 1
            started = time.perf_counter()
            try:
                result = session.step(item.action)
                took = time.perf_counter() - started
                if result.done:
                    session.reset(seed=ctx.seed)
            except EnvError:
                took = time.perf_counter() - started  # a refusal is an answer
            except SessionTimedOut:
                hangs.append(item)
                ctx.hung_steps += 1
                session.close()
                session = ctx.session()
                session.reset(seed=ctx.seed)
                continue
            spent += took
            timings.append((took, item))
    finally:
        session.close()
    timings.sort(key=lambda t: -t[0])
    slowest = ", ".join(f"{item.label} {took * 1e3:.1f} ms" for took, item in timings[:3]) or "none answered"
    untried = f"; {len(inputs) - tried} inputs left untried (time budget)" if tried < len(inputs) else ""
    if not hangs:
        return ProbeResult("timeouts", PASSED, f"{tried} edge-case and random inputs all answered within "
                           f"{ctx.step_timeout:g} s; slowest: {slowest}{untried}")  # fmt: skip
    evidence = [f"{item.label} did not answer within {ctx.step_timeout:g} s (after reset(seed={ctx.seed})): "
                f"{_shown(item.action)}" for item in hangs]  # fmt: skip
    if ctx.capacity <= 64:
        free = _slots_free(ctx)
        if free < ctx.capacity:
            evidence.append(f"afterwards the server held {free} of its {ctx.capacity} sessions: each hung step keeps "
                            "its session's slot while it runs on, so a few hung steps fill a replica; in a run "
                            "the worker restarts a replica whose free slots fall below what the run holds on it, "
                            "ending its other episodes")  # fmt: skip
        else:
            evidence.append(f"afterwards the server still held all {ctx.capacity} sessions: the hung steps gave "
                            "their slots back")  # fmt: skip
    evidence.append(f"slowest of the {len(timings)} that answered: {slowest}")
    return failed("timeouts", f"{len(hangs)} input(s) hang a step past the {ctx.step_timeout:g} s limit", evidence)


PROBES = [probe_clean_reset, probe_seed_determinism, probe_session_isolation, probe_reward_integrity,
          probe_hidden_state, probe_capacity, probe_timeouts]  # fmt: skip


STEP_TRIES = 8


def step_failure(ctx: ProbeContext, tries: int = STEP_TRIES) -> ProbeResult | None:
    """A failed `steps` result when the server answered `tries` different schema-valid actions with one and the same
    error: an answer that does not depend on the input is a step that cannot work (OpenEnv's DIPG returns its
    client's StepResult from step(), and every call answers "EXECUTION_ERROR: 'StepResult' object has no attribute
    'model_dump'"). Without this the probes compared errors with errors and said "passed". A server that refuses
    many inputs for their content (an enum sent as text) answers each in its own words, or with a validation error,
    and is judged as before."""
    errors: set[str] = set()
    actions = _actions(ctx, ctx.seed + 97, tries)
    try:
        with ctx.session() as s:
            s.reset(seed=ctx.seed)
            for action in actions:
                try:
                    s.step(action)
                except EnvError as exc:
                    if exc.code == "VALIDATION_ERROR":
                        return None  # a refusal of this input, not a step that cannot work
                    errors.add(str(exc)[:300])
                    continue
                return None
    except (SessionBroken, SessionTimedOut):
        return None  # the probes that own these say them
    if len(errors) != 1 or len({_shown(a) for a in actions}) < 2:
        return None
    summary = f"every step failed: {tries} different schema-valid actions were all answered with the same error"
    return failed("steps", summary, [f"{errors.pop()} (after reset(seed={ctx.seed}); e.g. {_shown(actions[0])})"])


def run_probes(ctx: ProbeContext, progress=lambda name, i, n: None) -> list[ProbeResult]:
    """Establish what the server is, then run the probes in order; the timeouts probe runs last, because the
    steps it hangs may hold sessions for a while. A server that cannot step at all is said so once, and no probe
    claims to have judged its episodes."""
    progress("establishing", 0, len(PROBES))
    establish(ctx)
    broken = step_failure(ctx)
    if broken is not None:
        unjudged = [ProbeResult(p.__name__.removeprefix("probe_"), NOT_APPLICABLE, "could not judge: no step "
                                "succeeded (see steps)") for p in PROBES]  # fmt: skip
        return [broken, *unjudged]
    results = []
    for i, probe in enumerate(PROBES):
        name = probe.__name__.removeprefix("probe_")
        progress(name, i, len(PROBES))
        try:
            results.append(probe(ctx))
        except SessionTimedOut as exc:
            ctx.hung_steps += 1
            results.append(ProbeResult(name, NOT_APPLICABLE, f"could not judge: {exc} (the timeouts probe looks for "
                                       "the inputs that hang)"))  # fmt: skip
        except SessionBroken as exc:
            results.append(failed(name, "the probe's session broke", [str(exc)]))
        except EnvError as exc:
            results.append(failed(name, "the server refused a valid request", [str(exc)]))
    return results
