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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.actions import random_arguments
from envs.adapter import ToolFailed
from webapp.artifacts.model_names import WARMSTART_RECIPE, warmstart_dir


class WarmStartError(Exception):
    pass


def play_episodes(
    env_class, *, prompt: str, count: int, seed: int, max_turns: int, progress: Callable[[str, float], None]
) -> list[dict[str, Any]]:
    """Conversations played against live servers through `env_class` (an envs.adapter class): the model's turns
    are valid random calls of the version's tools, the tool turns are what the environment answered."""
    from transformers.utils import get_json_schema

    schemas = json.dumps([get_json_schema(getattr(env_class, tool.name)) for tool in env_class.tools])
    rng = random.Random(seed)
    env = env_class()
    conversations = []
    try:
        for index in range(count):
            reset_text = env.reset(seed=rng.randint(0, 10**6))
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt + reset_text}]
            for turn in range(rng.randint(min(2, max_turns), max_turns)):
                call = _successful_call(env, rng, turn)
                if call is None:
                    break
                name, arguments, result = call
                messages.append({"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})  # fmt: skip
                messages.append({"role": "tool", "name": name, "content": result})
                if env.episode is not None and env.episode.done:
                    break
            if len(messages) > 1:
                messages.append({"role": "assistant", "content": "Done."})
                conversations.append({"messages": messages, "tools": schemas})
            progress(f"played episode {index + 1}/{count}", 0.1 * (index + 1) / count)
    finally:
        env._close()
    if not conversations:
        raise WarmStartError("no tool call of this version succeeded: there is nothing to learn from")
    return conversations


def _successful_call(env, rng: random.Random, turn: int, tries: int = 5) -> tuple[str, dict, str] | None:
    """The episode's `turn`-th call: tools in a fixed round (the first tool first), arguments random and valid.

    A random choice of tool at every turn is unpredictable by construction, and a model this small then mixes
    the names it was shown ("try_dial" from try_code and read_dial: measured 3 valid calls in 20); a fixed round
    makes each choice follow from the call before it, which it learns."""
    tool = env.tools[turn % len(env.tools)]
    for _ in range(tries):
        arguments = random_arguments(tool, rng)
        try:
            result = getattr(env, tool.name)(**arguments)
        except ToolFailed:
            if env.episode is not None and env.episode.error:
                return None  # the session broke: the episode is over
            continue
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
    from workers.models.tiny import ensure_tiny_model, sft_save

    base = ensure_tiny_model()
    env_class = version_env_class(version, endpoints=endpoints, step_timeout=step_timeout)
    prompt = default_prompt(description=version.environment.description, tool_names=[t.name for t in env_class.tools])
    recipe = WARMSTART_RECIPE
    conversations = play_episodes(env_class, prompt=prompt, count=recipe["conversations"], seed=recipe["seed"],
                                  max_turns=recipe["max_turns"], progress=progress)  # fmt: skip
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()  # the caller's bar says it
    torch.manual_seed(recipe["seed"])
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    target.parent.mkdir(parents=True, exist_ok=True)
    return sft_save(model, tokenizer, conversations, target, epochs=recipe["epochs"], lr=recipe["lr"],
                    seed=recipe["seed"], recipe={**recipe, "base": str(base), "version": str(version)},
                    progress=progress, warmup_steps=2)  # fmt: skip


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
