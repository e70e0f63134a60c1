"""TRL integration: `watch(trainer, environment=...)` reports a `GRPOTrainer`'s run — every logged metric (its
evaluations as `eval/*`), and every episode with its turns, tool calls and results, reward, advantage and GRPO
group — and stops training when someone cancels the run in Trainyard.

Episodes are taken where TRL scores them: each reward function of the trainer is wrapped (its name and output
unchanged); once the step's last one has answered, each episode's reward is the weighted sum TRL uses (the
trainer's `reward_weights`), and its advantage GRPO's over its group. Async reward functions (an environment's
async `get_reward`, say) are not seen. The trainer's environment classes are wrapped too (`recorded`): each tool
call's error and latency join its turn in the transcript.
"""

from __future__ import annotations

import functools
import inspect
import statistics
import time
from typing import Any

from transformers import TrainerCallback

from trainyard.run import Run, init


def _text(message: Any) -> str:
    if isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, list):  # multimodal parts
            return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return str(content or "")
    return str(message)


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return "\n\n".join(_text(m) for m in prompt if isinstance(m, dict) and m.get("role") != "system")
    return str(prompt)


def _turns(completion: Any) -> list[dict[str, Any]]:
    if isinstance(completion, list):
        return [dict(m) for m in completion if isinstance(m, dict)]
    return [{"role": "assistant", "content": str(completion)}]


def _advantages(rewards: list[float], size: int) -> list[float]:
    out: list[float] = []
    for start in range(0, len(rewards), size):
        group = rewards[start : start + size]
        mean = statistics.fmean(group)
        std = statistics.pstdev(group) if len(group) > 1 else 0.0
        out += [(r - mean) / (std + 1e-4) for r in group]
    return out


KEY_SETTINGS = ("learning_rate", "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
                "max_completion_length", "temperature", "beta", "loss_type", "max_steps", "seed")  # fmt: skip


def _config_of(args) -> dict[str, Any]:
    """The run's settings as its page shows them: the key GRPO ones, and every other one the script changed from its
    default (a GRPOConfig has some 200 fields; a page of them would hide the few that matter)."""
    import dataclasses

    defaults = {}
    for field in dataclasses.fields(args):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    config = {}
    for name, value in args.to_dict().items():
        scalar = isinstance(value, str | int | float | bool) or value is None
        if not scalar or name.endswith("_dir") or "token" in name:  # paths of the script's machine, secrets
            continue
        if name in KEY_SETTINGS or defaults.get(name, object()) != value:
            config[name] = value
    return config


class TrainyardCallback(TrainerCallback):
    """A `transformers.TrainerCallback`: the config at the start, every `on_log` metric at its step, evaluations as
    `eval/*`, a cancel from the page as a stop, and the run's end. Only the main process reports."""

    def __init__(self, run: Run | None = None, **init_kwargs: Any) -> None:
        self.run = run
        self.init_kwargs = init_kwargs

    def on_train_begin(self, args, state, control, **kwargs):
        if self.run is None and state.is_world_process_zero:
            self.run = init(config={**_config_of(args), **self.init_kwargs.pop("config", {})},
                            max_steps=state.max_steps or 0, **self.init_kwargs)  # fmt: skip

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.run is not None and state.is_world_process_zero:
            metrics = {(f"eval/{k[5:]}" if k.startswith("eval_") else k): v for k, v in (logs or {}).items()}
            self.run.log(metrics, step=state.global_step)

    def on_step_end(self, args, state, control, **kwargs):
        if self.run is not None and self.run.cancel_requested:
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        if self.run is not None and state.is_world_process_zero:
            cancelled = self.run.cancel_requested
            self.run.finish("cancelled" if cancelled else "succeeded", "cancelled in Trainyard" if cancelled else "")


RESULT_LIMIT = 20_000  # characters of a tool's result kept with its call


def recorded(factory):
    """An `environment_factory` class (or a dict of them) whose tool calls are recorded on each instance: the tool,
    its arguments, its result or the exception it raised, and how long it took. `watch` adds these to each
    episode's tool turns (the transcript then shows an environment's error as one, and each call's latency). Its
    tools keep their names, signatures and docstrings, which TRL reads to describe them to the model."""
    if isinstance(factory, dict):
        return {key: recorded(value) for key, value in factory.items()}
    if getattr(factory, "_trainyard_recorded", False):
        return factory
    tools = [name for name, _ in inspect.getmembers(factory, predicate=inspect.isfunction)
             if name not in ("reset", "get_reward") and not name.startswith("_")]  # fmt: skip
    namespace: dict[str, Any] = {"_trainyard_recorded": True, "__doc__": factory.__doc__,
                                 "__module__": factory.__module__}  # fmt: skip

    def reset(self, *args, **kwargs):
        self._trainyard_calls = []
        return factory.reset(self, *args, **kwargs)

    namespace["reset"] = functools.wraps(factory.reset)(reset)
    for name in tools:
        # TRL offers a public @staticmethod as a tool too (it lists the class's functions), called without `self`.
        static = isinstance(inspect.getattr_static(factory, name), staticmethod)
        namespace[name] = _recorded_tool(getattr(factory, name), name, static=static)
    return type(factory.__name__, (factory,), namespace)


def _recorded_tool(method, name: str, *, static: bool = False):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        calls = self.__dict__.setdefault("_trainyard_calls", [])
        started = time.perf_counter()
        try:
            result = method(*args, **kwargs) if static else method(self, *args, **kwargs)
        except Exception as exc:
            calls.append({"name": name, "error": f"{type(exc).__name__}: {exc}"[:RESULT_LIMIT],
                          "seconds": round(time.perf_counter() - started, 4)})  # fmt: skip
            raise
        calls.append({"name": name, "seconds": round(time.perf_counter() - started, 4)})
        return result

    if static:  # recorded on the instance, so a method; its signature (what TRL describes) stays the function's
        signature = inspect.signature(method)
        self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        call.__signature__ = signature.replace(parameters=[self_parameter, *signature.parameters.values()])
    return call


def _with_calls(turns: list[dict[str, Any]], environment: Any) -> list[dict[str, Any]]:
    """Each tool message gets what the environment's recorded call said: its error, its latency."""
    calls = list(getattr(environment, "_trainyard_calls", None) or [])
    for turn in turns:
        if turn.get("role") == "tool" and calls and calls[0]["name"] == turn.get("name"):
            call = calls.pop(0)
            turn["seconds"] = call["seconds"]
            if "error" in call:
                turn["error"] = call["error"]
    return turns


class _EpisodeTap:
    """Collects each reward function's scores of a step, and reports the step's episodes after the last one."""

    def __init__(self, trainer, callback: TrainyardCallback) -> None:
        self.trainer = trainer
        self.callback = callback
        self.scores: dict[int, list[float | None]] = {}

    def wrap(self, index: int, func):
        @functools.wraps(func)
        def scored(*args: Any, **kwargs: Any):
            result = func(*args, **kwargs)
            self.scores[index] = list(result)
            if index == self.last_sync_index():
                self.report(kwargs)
            return result

        return scored

    def last_sync_index(self) -> int:
        import inspect

        sync = [i for i, f in enumerate(self.trainer.reward_funcs)
                if callable(f) and not inspect.iscoroutinefunction(getattr(f, "__wrapped__", f))]  # fmt: skip
        return sync[-1] if sync else -1

    def report(self, kwargs: dict[str, Any]) -> None:
        run = self.callback.run
        if run is None or not self.trainer.state.is_world_process_zero:
            self.scores.clear()
            return
        prompts, completions = kwargs.get("prompts") or [], kwargs.get("completions") or []
        weights = [float(w) for w in getattr(self.trainer, "reward_weights", [1.0] * len(self.trainer.reward_funcs))]
        rewards = []
        for row in range(len(prompts)):
            total = 0.0
            for index, scores in self.scores.items():
                value = scores[row] if row < len(scores) else None
                if value is not None and value == value:  # None or NaN: that function did not score it
                    total += weights[index] * float(value)
            rewards.append(total)
        size = max(1, int(getattr(self.trainer, "num_generations", 1) or 1))
        advantages = _advantages(rewards, size)
        state = kwargs.get("trainer_state") or self.trainer.state
        step = state.global_step + 1
        environments = kwargs.get("environments") or []
        run.log_episodes([
            {"step": step, "group": row // size, "index": row % size, "reward": rewards[row],
             "advantage": advantages[row], "prompt": _prompt_text(prompts[row]),
             "turns": _with_calls(_turns(completions[row]), environments[row] if row < len(environments) else None),
             "environment": type(environments[row]).__name__ if row < len(environments) else ""}
            for row in range(len(prompts))
        ])  # fmt: skip
        self.scores.clear()


def watch(trainer, *, run: Run | None = None, **init_kwargs: Any) -> TrainyardCallback:
    """Report `trainer` (a TRL GRPOTrainer) to Trainyard: its metrics, its episodes and its end. `init_kwargs` go to
    `trainyard.init` when the training starts (environment=..., name=..., url=..., token=...)."""
    callback = TrainyardCallback(run, **init_kwargs)
    tap = _EpisodeTap(trainer, callback)
    factories = getattr(trainer, "environment_factories", None)
    if isinstance(factories, dict):  # every environment the trainer makes from now on records its tool calls
        for key, factory in list(factories.items()):
            factories[key] = recorded(factory)
            for instance in (getattr(trainer, "_environment_pool", None) or {}).get(key, []):
                instance.__class__ = factories[key]  # those it made already, too
    trainer.reward_funcs = [tap.wrap(i, f) if callable(f) and not hasattr(f, "forward") else f
                            for i, f in enumerate(trainer.reward_funcs)]  # fmt: skip
    trainer.add_callback(callback)
    return callback
