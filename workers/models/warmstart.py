"""Warm starts: a small model taught to call one environment version's tools before GRPO trains it.

A model that never emits a parseable call of an environment's tools gives GRPO nothing to learn from (every run
"succeeds" with zero environment steps). The tiny model was warmed up on the built-in environments only; a warm
start repeats that step for any version: synthetic episodes are played against the version's running server with
valid actions drawn from its own tool schemas (real tool results, real observations), through the very adapter
class a run uses, so SFT and GRPO see byte-identical prompts and tool lists; then a short SFT (assistant tokens
only) continues from the base model. The result is cached per version, recipe and base model
(webapp.artifacts.model_names): `tiny-local@<environment>:<version>`.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.actions import Habit, offered_arguments, offered_values, random_arguments, spelled_words
from envs.adapter import ToolFailed
from webapp.artifacts.model_names import WARMSTART_RECIPE, warmstart_dir


class WarmStartError(Exception):
    pass


# Below this share of calls accepted, a warm start teaches too few real calls to be worth a model: it refuses and
# says which tool and arguments the environment turned down.
MIN_ACCEPTED_SHARE = 0.2
MIN_CONVERSATIONS = 4
# At most this many values copied from observations get tokens of their own (the most often sent first).
COPIED_TOKENS = 200


class CallTally:
    """Calls sent to the environment during the synthetic episodes, and what it did with them."""

    def __init__(self) -> None:
        self.sent = self.accepted = 0
        self.refused: dict[str, int] = {}
        self.example: dict[str, str] = {}  # per tool: the last refused arguments and the environment's answer
        self.copied: Counter[str] = Counter()  # string values of accepted calls that the episode had shown

    def record(self, tool: str, arguments: dict, error: str | None, *, shown: str = "") -> None:
        """`shown`: the text of what the episode's observations showed so far; an accepted call's string values
        found in it were copied from it."""
        self.sent += 1
        if error is None:
            self.accepted += 1
            self.copied.update(v for v in arguments.values() if isinstance(v, str) and 0 < len(v) <= 40 and v in shown)
            return
        self.refused[tool] = self.refused.get(tool, 0) + 1
        self.example[tool] = f"{json.dumps(arguments, ensure_ascii=False)[:120]} → {error[:160]}"

    @property
    def share(self) -> float:
        return self.accepted / self.sent if self.sent else 0.0

    def worst(self) -> str:
        if not self.refused:
            return "no call was refused"
        tool = max(self.refused, key=self.refused.get)
        return f"{tool} was refused {self.refused[tool]} times, for example {self.example[tool]}"


def play_episodes(
    env_class,
    *,
    prompt: str,
    count: int,
    seed: int,
    max_turns: int,
    progress: Callable[[str, float], None],
    tally: CallTally | None = None,
) -> list[dict[str, Any]]:
    """Conversations played against live servers through `env_class` (an envs.adapter class): the model's turns
    are calls of the version's tools that the environment accepted (each candidate is sent; a refusal — an error,
    or a penalty that changed nothing — is dropped and counted in `tally`), the tool turns are what it answered."""
    tally = tally if tally is not None else CallTally()
    from transformers.utils import get_json_schema

    schemas = json.dumps([get_json_schema(getattr(env_class, tool.name)) for tool in env_class.tools])
    rng = random.Random(seed)
    habit = Habit()
    env = env_class()
    conversations = []
    try:
        for index in range(count):
            reset_text = env.reset(seed=rng.randint(0, 10**6))
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt + reset_text}]
            offers: list[list[Any]] = []  # per call: the choices its observation offered, when it took one
            for turn in range(rng.randint(min(2, max_turns), max_turns)):
                shown = env.episode.last_observation if env.episode is not None else None
                call = _successful_call(env, rng, turn, tally, habit)
                if call is None:
                    break
                name, arguments, result = call
                choices = offered_values(shown)
                offers.append(choices if any(v in choices for v in arguments.values()) else [])  # a choice taken
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})  # fmt: skip
                messages.append({"role": "tool", "name": name, "content": result})
                if env.episode is not None and env.episode.done:
                    break
            if len(messages) > 1:
                messages.append({"role": "assistant", "content": "Done."})
                conversations.append({"messages": messages, "tools": schemas, "offers": offers})
            progress(f"played episode {index + 1}/{count}", 0.1 * (index + 1) / count)
    finally:
        env._close()
    accepted = f"the environment accepted {tally.accepted} of {tally.sent} calls ({tally.share:.0%})"
    if not conversations:
        raise WarmStartError(f"no tool call of this version succeeded: there is nothing to learn from ({accepted}; "
                             f"{tally.worst()})")  # fmt: skip
    if tally.share < MIN_ACCEPTED_SHARE or len(conversations) < MIN_CONVERSATIONS:
        raise WarmStartError(f"{accepted} in {len(conversations)} usable episodes: too few to teach a model its "
                             f"calls (at least {MIN_ACCEPTED_SHARE:.0%} and {MIN_CONVERSATIONS} episodes); "
                             f"{tally.worst()}")  # fmt: skip
    progress(f"{accepted}", 0.1)
    return conversations


def fitting_conversations(tokenizer, conversations: list[dict[str, Any]], *, max_length: int) -> list[dict]:
    """The conversations whose tokens fit what SFT trains on, each too long whole cut after its last call that fits:
    OpenEnv's chess answers every move with its board and twenty legal moves, and no whole episode fit 1,024 tokens,
    but its first calls do, and they are what a model must learn first. Every prompt carries the version's tools
    (their descriptions and schemas) and the first observation: when even a first call outgrows it, a model cannot
    read what it is to call, so fewer than MIN_CONVERSATIONS that fit is a refusal that says which of the two is too
    long, never an empty training set (`num_samples=0`)."""

    def length(messages: list[dict], tools: list[dict]) -> int:
        text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
        return len(tokenizer(text)["input_ids"])

    kept, unfit = [], []
    for conversation in conversations:
        messages, tools = conversation["messages"], json.loads(conversation["tools"])
        calls = [i + 1 for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls")]
        for end in dict.fromkeys([len(messages), *reversed(calls)]):
            needed = length(messages[:end], tools)
            if needed <= max_length:
                kept.append({**conversation, "messages": messages[:end]})
                break
        else:
            unfit.append(needed)  # the shortest cut: up to the first call
    if len(kept) < MIN_CONVERSATIONS:
        tools = json.loads(conversations[0]["tools"]) if conversations else []
        bare = len(tokenizer(tokenizer.apply_chat_template([{"role": "user", "content": ""}], tools=tools,
                                                           tokenize=False))["input_ids"])  # fmt: skip
        shortest = min(unfit, default=0)
        if bare * 2 >= shortest:
            advice = ("a model that cannot read its tools cannot learn to call them (offer it fewer: `env add --tools "
                      "NAME,…`, or the version's \"Tools the model is offered\")")  # fmt: skip
        else:
            advice = ("the rest is the task and the first observation: show the model fewer of its fields (`env "
                      "add --observation-fields NAME,…`, or the version's \"Observation fields the model "
                      "reads\")")  # fmt: skip
        raise WarmStartError(f"{len(kept)} of {len(conversations)} played episodes fit the {max_length:,} tokens a "
                             f"warm start trains on, even cut after their first call: the shortest takes "
                             f"{shortest:,}, of which {bare:,} are the {len(tools)} tools' descriptions and schemas "
                             f"that every prompt carries; {advice}; or warm-start a model with a longer "
                             "context")  # fmt: skip
    return kept


# A warm start's SFT takes a round more (up to ROUNDS) while the model, given the conversation so far, calls with a
# value among those the observation offered in fewer than ENOUGH_OFFERED of the calls checked: OpenEnv's chess needs
# its colour read (white's moves and black's differ), which one round of 6 epochs did not teach (its first move legal
# 12 of 24 times) and four did (24 of 24). An environment that offers no choices is done after one.
ROUNDS = 4
ENOUGH_OFFERED = 0.75
CHECKED_CONVERSATIONS = 16
TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


def offered_calls(model, tokenizer, conversations: list[dict[str, Any]], *, limit: int = CHECKED_CONVERSATIONS
                  ) -> tuple[int, int]:  # fmt: skip
    """(calls the model made with an offered value, calls checked): at each call of up to `limit` conversations
    that took one of the choices its observation offered, the model's own greedy call, given the conversation up to
    there."""
    import torch

    took = checked = 0
    model.eval()
    for conversation in [c for c in conversations if any(c.get("offers", []))][:limit]:
        messages, tools = conversation["messages"], json.loads(conversation["tools"])
        calls = [i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls")]
        for index, offers in zip(calls, conversation["offers"], strict=False):
            if not offers:
                continue
            inputs = tokenizer.apply_chat_template(messages[:index], tools=tools, add_generation_prompt=True,
                                                   return_tensors="pt", return_dict=True)  # fmt: skip
            with torch.no_grad():
                out = model.generate(**inputs, max_new_tokens=64, do_sample=False, pad_token_id=tokenizer.pad_token_id)
            text = tokenizer.decode(out[0][inputs["input_ids"].shape[1] :])
            checked += 1
            took += any(value in offers for value in _call_values(text))
    return took, checked


# A round more, too, while the model's first turn, sampled as a run samples it (TRL's default temperature, 1.0, which
# runs keep), is a call TRL parses in fewer than ENOUGH_PARSED of the samples: an episode whose first turn is not a
# call ends with none. OpenEnv's reasoning_gym ends its episode at the one answer, so its calls per episode are the
# share of first turns that parse; after one round 12 of 48 episodes wrote their answer as text or as a call's JSON
# without its `<tool_call>` (0.67 to 0.92 calls per episode) while greedy decoding called every time.
ENOUGH_PARSED = 0.95
# ... but after the first round 9 in 10 is enough: a model that calls that often is near what more rounds give (our
# metadata_maze: 60 of 64 after one round, 62 after three, 250 s more), where one far below gains much (reasoning_gym:
# 45 of 64 after one round, 63 after three).
ENOUGH_PARSED_AT_FIRST = 0.9
SAMPLES_PER_CONVERSATION = 4
RUN_TEMPERATURE = 1.0


def sampled_calls(model, tokenizer, conversations: list[dict[str, Any]], *, limit: int = CHECKED_CONVERSATIONS,
                  samples: int = SAMPLES_PER_CONVERSATION, seed: int = 0) -> tuple[int, int]:  # fmt: skip
    """(samples that called one of the tools, samples drawn): `samples` first turns of each of up to `limit`
    conversations, sampled at RUN_TEMPERATURE and parsed as TRL's GRPO parses a rollout (`parse_response` with the
    response schema it adds); seeded, and without touching the caller's random state or tokenizer."""
    import copy

    import torch
    from trl.chat_template_utils import add_response_schema, parse_response

    parser = add_response_schema(copy.deepcopy(tokenizer))
    called = drawn = 0
    model.eval()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for conversation in conversations[:limit]:
            messages, tools = conversation["messages"], json.loads(conversation["tools"])
            names = {t["function"]["name"] if "function" in t else t.get("name") for t in tools}
            inputs = tokenizer.apply_chat_template(messages[:1], tools=tools, add_generation_prompt=True,
                                                   return_tensors="pt", return_dict=True)  # fmt: skip
            with torch.no_grad():
                out = model.generate(**inputs, max_new_tokens=96, do_sample=True, temperature=RUN_TEMPERATURE,
                                     top_p=1.0, top_k=0, num_return_sequences=samples,
                                     pad_token_id=tokenizer.pad_token_id)  # fmt: skip
            prompt_ids = inputs["input_ids"][0].tolist()
            for row in out:
                ids = row[len(prompt_ids) :].tolist()
                if tokenizer.eos_token_id in ids:  # what follows the end is padding
                    ids = ids[: ids.index(tokenizer.eos_token_id) + 1]
                parsed = parse_response(parser, ids, prefix=prompt_ids, tools=tools)
                drawn += 1
                called += any(c.get("function", {}).get("name") in names for c in parsed.get("tool_calls") or [])
    return called, drawn


def _call_values(text: str) -> list[Any]:
    match = TOOL_CALL.search(text)
    try:
        arguments = json.loads(match.group(1)).get("arguments") if match else None
    except (ValueError, AttributeError):
        return []
    return list(arguments.values()) if isinstance(arguments, dict) else []


def tokens_for_words(model, tokenizer, words: list[str]) -> list[str]:
    """Give each word a call must spell exactly (a tool's name, an enum value, a value the calls copied from an
    observation: a legal move, a company's name) that the base tokenizer splits into pieces a token of its own,
    learned in the SFT that follows; the words added.

    The tiny model's tokenizer learned the built-in games' words: OpenEnv's grid_world takes UP, DOWN, LEFT or RIGHT,
    which it spelled in up to five pieces, and the model garbled them ("DP", "RIGE", "LeightWN": 12 of 13 calls of a
    3-step run refused); and it spelled the companies finqa had named in pieces and garbled them ("glexme"). A token
    of its own is one choice to copy, not five to spell. Each new token matches a
    whole word only (never the "UP" of "UPDATE") and starts as the mean of its pieces' embeddings, so the model reads
    it at first as it read the pieces."""
    import torch
    from tokenizers import AddedToken

    vocabulary = tokenizer.get_vocab()
    pieces = {w: tokenizer(w, add_special_tokens=False)["input_ids"] for w in words if w not in vocabulary}
    added = [w for w, ids in pieces.items() if len(ids) > 1]
    if not added:
        return []
    tokenizer.add_tokens([AddedToken(w, single_word=True, normalized=False) for w in added])
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    embeddings = model.get_input_embeddings().weight
    with torch.no_grad():
        for word in added:
            embeddings[tokenizer.convert_tokens_to_ids(word)] = embeddings[pieces[word]].mean(dim=0)
    return added


def _successful_call(
    env, rng: random.Random, turn: int, tally: CallTally, habit: Habit | None = None, tries: int = 5
) -> tuple[str, dict, str] | None:
    """The episode's `turn`-th call: tools in a fixed round (the first tool first), arguments valid to the schema,
    and every other try taken from what the last observation offers (legal moves, free columns; chosen by
    `habit`): an environment whose valid inputs are narrower than its schema refuses most random ones.

    A random choice of tool at every turn is unpredictable by construction, and a model this small then mixes
    the names it was shown ("try_dial" from try_code and read_dial: measured 3 valid calls in 20); a fixed round
    makes each choice follow from the call before it, which it learns."""
    tool = env.tools[turn % len(env.tools)]
    if habit is not None and env.episode is not None:
        habit.see(env.episode.last_observation)  # once a turn: a refusal shows the same observation again
    for attempt in range(tries):
        observation = env.episode.last_observation if env.episode is not None else None
        # After two refusals, the required arguments alone: an optional one made up is the usual cause (calendar's
        # list_events refused "iCalUID": "amber"), and a call with none of them is the first a model should learn.
        minimal = attempt >= 2
        earlier = (
            [env.episode.reset_observation, *(e.observation for e in env.episode.events if e.observation)]
            if env.episode is not None
            else []
        )
        offered = (
            offered_arguments(tool, observation, rng, minimal=minimal, earlier=earlier, habit=habit)
            if attempt % 2 == 0
            else None
        )
        arguments = offered if offered is not None else random_arguments(tool, rng, minimal=minimal)
        try:
            result = getattr(env, tool.name)(**arguments)
        except ToolFailed as exc:
            tally.record(tool.name, arguments, str(exc))
            if habit is not None and offered is not None:
                habit.refused([v for v in offered.values() if isinstance(v, str | int)])
            if env.episode is not None and env.episode.error:
                return None  # the session broke: the episode is over
            continue
        tally.record(tool.name, arguments, None, shown=json.dumps([*earlier, observation], default=str))
        return tool.name, arguments, result
    return None


def warm_start(
    version,
    *,
    endpoints: list[str],
    step_timeout: float = 30.0,
    progress: Callable[[str, float], None] = lambda m, f: None,
) -> Path:
    """Play, then SFT from the tiny model; returns the model folder (cached: a second call returns at once)."""
    from workers.models.tiny import built_once

    target = warmstart_dir(version)
    return built_once(target, lambda: _warm_start(version, target, endpoints, step_timeout, progress))


def _warm_start(version, target: Path, endpoints: list[str], step_timeout: float, progress) -> Path:
    import datasets
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from envs.prompts import default_prompt
    from webapp.catalog.environment_class import version_env_class
    from workers.models.tiny import SFT_MAX_LENGTH, ensure_tiny_model, sft_save

    base = ensure_tiny_model()
    env_class = version_env_class(version, endpoints=endpoints, step_timeout=step_timeout)
    prompt = default_prompt(description=version.environment.description, tool_names=[t.name for t in env_class.tools])
    recipe = WARMSTART_RECIPE
    tally = CallTally()
    conversations = play_episodes(env_class, prompt=prompt, count=recipe["conversations"], seed=recipe["seed"],
                                  max_turns=recipe["max_turns"], progress=progress, tally=tally)  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    copied = [value for value, _ in tally.copied.most_common(COPIED_TOKENS)]
    words = tokens_for_words(model, tokenizer, list(dict.fromkeys([*spelled_words(env_class.tools), *copied])))
    conversations = fitting_conversations(tokenizer, conversations, max_length=SFT_MAX_LENGTH)
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()  # the caller's bar says it
    torch.manual_seed(recipe["seed"])
    target.parent.mkdir(parents=True, exist_ok=True)

    rounds_done = []

    def learned(model, tokenizer) -> tuple[bool, str]:
        rounds_done.append(len(rounds_done) + 1)
        took, checked = offered_calls(model, tokenizer, conversations)
        called, drawn = sampled_calls(model, tokenizer, conversations, seed=recipe["seed"])
        offered = (f"its own calls took an offered value {took} of {checked} times" if checked
                   else "no observation offered choices")  # fmt: skip
        parsed = f"{called} of {drawn} first turns sampled at temperature {RUN_TEMPERATURE:g} were calls"
        share = ENOUGH_PARSED_AT_FIRST if len(rounds_done) == 1 else ENOUGH_PARSED
        enough = (not checked or took >= ENOUGH_OFFERED * checked) and called >= share * drawn
        return enough, f"{offered}; {parsed}"

    return sft_save(model, tokenizer, conversations, target, epochs=recipe["epochs"], lr=recipe["lr"],
                    seed=recipe["seed"], recipe={**recipe, "base": str(base), "version": str(version),
                            "calls_sent": tally.sent, "calls_accepted": tally.accepted, "tokens_added": words},
                    progress=progress, warmup_steps=2, builder="warmstart", like_lengths=True, rounds=ROUNDS,
                    learned=learned)  # fmt: skip


def warmstart_version(version, *, progress: Callable[[str, float], None] = lambda m, f: None) -> Path:
    """Provision the version (one replica), warm-start on it, tear it down; the model folder."""
    from django.conf import settings

    from webapp.catalog.deployments import default_provider_kind, provider_get, version_source
    from workers.models.tiny import model_current

    target = warmstart_dir(version)
    if model_current(target):
        progress("already warm-started", 1.0)
        return target
    provider = provider_get(default_provider_kind(version.source_kind))
    progress(f"starting {version}", 0.0)
    source = version_source(version, capacity=max(1, version.effective_capacity))
    deployment = provider.provision(source, replicas=1, labels={"purpose": "warmstart"})
    try:
        return warm_start(version, endpoints=deployment.endpoints,
                          step_timeout=float(settings.TRAINYARD_ENV_STEP_TIMEOUT), progress=progress)  # fmt: skip
    finally:
        provider.teardown(deployment)
