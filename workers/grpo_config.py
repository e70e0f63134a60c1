"""From a run's settings to TRL's `GRPOConfig` (and `peft`'s `LoraConfig`): the one translation the trainer uses and
the pre-flight checks. Importing this module imports neither TRL nor torch; the functions that need them import
them.

`python -m workers.grpo_config fields` prints TRL's GRPOConfig fields (name → JSON types, choices, default, help) for
the web process, which never imports TRL. `python -m workers.grpo_config check` reads settings as JSON on stdin,
builds the real GRPOConfig (TRL's own checks run in its __post_init__) and prints one JSON line: ok, or the reason.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

# What the worker decides, never the run: where files go, trackers, logging, the device and its precision, how the
# processes are launched. The reason is shown when a run's advanced settings name one of them.
OWNED: dict[str, str] = {
    **{name: "Trainyard keeps checkpoints in the run's folder" for name in (
        "output_dir", "overwrite_output_dir", "save_strategy", "resume_from_checkpoint", "save_only_model")},
    **{name: "Trainyard records metrics itself (its charts, its API)" for name in (
        "report_to", "logging_dir", "logging_steps", "logging_strategy", "logging_first_step", "run_name",
        "disable_tqdm", "project", "trackio_space_id")},
    **{name: "models stay on the worker (download them from the run page)" for name in (
        "push_to_hub", "hub_model_id", "hub_strategy", "hub_token", "hub_private_repo", "hub_always_push",
        "hub_revision")},
    **{name: "the worker picks the device and its precision" for name in (
        "use_cpu", "bf16", "fp16", "bf16_full_eval", "fp16_full_eval", "tf32", "no_cuda", "local_rank")},
    **{name: "the worker launches the trainer's processes" for name in (
        "deepspeed", "fsdp", "fsdp_config", "ddp_backend", "accelerator_config", "parallelism_config")},
    **{name: "set by the run's Evaluation settings (eval_steps, eval_seeds, eval_k, eval_greedy)" for name in (
        "eval_strategy", "eval_steps", "eval_on_start", "num_generations_eval", "per_device_eval_batch_size",
        "do_eval", "eval_delay")},
    **{name: "choose it with generation_backend (and vllm_server_url)" for name in (
        "use_vllm", "vllm_mode", "use_transformers_continuous_batching", "vllm_server_base_url", "vllm_server_host",
        "vllm_server_port")},
}  # fmt: skip


def grpo_kwargs(settings: dict[str, Any], output_dir: Path | str, *, on_gpu: bool, bf16: bool) -> dict[str, Any]:
    """The keyword arguments of GRPOConfig for a run's settings (a GRPOSettings dict)."""
    backend = settings.get("generation_backend", "hf")
    kwargs: dict[str, Any] = {
        **(settings.get("advanced") or {}),
        "output_dir": str(output_dir),
        "max_steps": settings["max_steps"],
        "learning_rate": settings["learning_rate"],
        "per_device_train_batch_size": settings["per_device_train_batch_size"],
        "gradient_accumulation_steps": settings["gradient_accumulation_steps"],
        "num_generations": settings["num_generations"],
        "max_completion_length": settings["max_completion_length"],
        "max_tool_calling_iterations": settings["max_tool_calling_iterations"],
        "beta": settings["beta"],
        "temperature": settings["temperature"],
        "top_p": settings.get("top_p", 1.0),
        "top_k": settings.get("top_k", 0),
        "loss_type": settings.get("loss_type", "dapo"),
        "scale_rewards": settings.get("scale_rewards", "group"),
        "epsilon": settings.get("epsilon", 0.2),
        "epsilon_high": settings.get("epsilon_high") or None,
        "num_iterations": settings.get("num_iterations", 1),
        "mask_truncated_completions": settings.get("mask_truncated_completions", False),
        "seed": settings["seed"],
        "save_strategy": "steps",
        "save_steps": settings["save_steps"],
        "logging_steps": 1,
        "report_to": "none",
        "use_cpu": not on_gpu,
        "bf16": bf16,
        "gradient_checkpointing": (settings.get("advanced") or {}).get("gradient_checkpointing", False),
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }
    if settings.get("eval_steps"):  # held-out seeds at step 0, every eval_steps (and at the end, from the trainer)
        k = settings.get("eval_k", 1)
        batch = settings["per_device_train_batch_size"] * settings["gradient_accumulation_steps"]
        kwargs.update(eval_strategy="steps", eval_steps=settings["eval_steps"], eval_on_start=True,
                      num_generations_eval=k, per_device_eval_batch_size=max(k, batch // k * k))  # fmt: skip
    if backend == "continuous_batching":
        kwargs["use_transformers_continuous_batching"] = True
    elif backend in ("vllm_colocate", "vllm_server"):
        kwargs["use_vllm"] = True
        kwargs["vllm_mode"] = "colocate" if backend == "vllm_colocate" else "server"
        if settings.get("vllm_server_url"):
            kwargs["vllm_server_base_url"] = settings["vllm_server_url"]
    return kwargs


def grpo_config(settings: dict[str, Any], output_dir: Path | str):
    import torch
    from trl import GRPOConfig

    on_gpu = torch.cuda.is_available()
    return GRPOConfig(**grpo_kwargs(settings, output_dir, on_gpu=on_gpu,
                                    bf16=on_gpu and torch.cuda.is_bf16_supported()))  # fmt: skip


def lora_config(settings: dict[str, Any]):
    """peft's LoraConfig for a run with lora_r > 0, else None (full fine-tuning)."""
    if not settings.get("lora_r"):
        return None
    from peft import LoraConfig

    from webapp.runs.grpo import lora_modules

    return LoraConfig(
        r=settings["lora_r"], lora_alpha=settings.get("lora_alpha", 16), lora_dropout=settings.get("lora_dropout", 0.0),
        target_modules=lora_modules(settings.get("lora_target_modules", "all-linear")), task_type="CAUSAL_LM",
    )  # fmt: skip


def _json_types(annotation) -> tuple[set[str], list[str]]:
    """An annotation as the JSON types a value may have (and an enum's choices)."""
    import enum
    import types
    import typing

    kinds: set[str] = set()
    choices: list[str] = []
    parts = typing.get_args(annotation) if isinstance(annotation, types.UnionType) or typing.get_origin(
        annotation) is typing.Union else (annotation,)  # fmt: skip
    for part in parts:
        origin = typing.get_origin(part) or part
        if part is type(None):
            kinds.add("null")
        elif origin is bool:
            kinds.add("boolean")
        elif origin is int:
            kinds.add("integer")
        elif origin is float:
            kinds |= {"number", "integer"}
        elif origin is str:
            kinds.add("string")
        elif origin in (list, tuple, typing.List):  # noqa: UP006 - matches old-style annotations in TRL
            kinds.add("array")
        elif origin in (dict, typing.Dict):  # noqa: UP006
            kinds.add("object")
        elif isinstance(origin, type) and issubclass(origin, enum.Enum):
            kinds.add("string")
            choices += [str(member.value) for member in origin]
        elif origin is typing.Literal:
            kinds.add("string")
            choices += [str(v) for v in typing.get_args(part)]
        else:
            kinds.add("any")
    return kinds, choices


def fields_table() -> dict[str, Any]:
    import dataclasses
    import typing
    from importlib.metadata import version

    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    table = {}
    for f in dataclasses.fields(GRPOConfig):
        if not f.init or f.name.startswith("_"):
            continue
        kinds, choices = _json_types(hints.get(f.name, typing.Any))
        default = f.default if f.default is not dataclasses.MISSING else None
        try:
            json.dumps(default)
        except TypeError:
            default = str(default)
        table[f.name] = {"types": sorted(kinds), "choices": choices, "default": default,
                         "help": str(f.metadata.get("help", ""))[:400]}  # fmt: skip
    return {"trl": version("trl"), "fields": table}


def check(settings: dict[str, Any]) -> dict[str, Any]:
    """Build the real GRPOConfig (and LoraConfig): TRL's and peft's own checks judge the values."""
    import tempfile

    try:
        with tempfile.TemporaryDirectory() as tmp:
            grpo_config(settings, tmp)
    except Exception as exc:  # TRL raises ValueError, transformers TypeError/ValueError; all say why
        return {"ok": False, "field": "advanced", "reason": f"TRL refuses these settings: {exc}"[:1000]}
    try:
        lora_config(settings)
    except Exception as exc:
        return {"ok": False, "field": "lora_r", "reason": f"peft refuses the LoRA settings: {exc}"[:1000]}
    return {"ok": True}


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "fields":
        print(json.dumps(fields_table()))
    elif command == "check":
        print(json.dumps(check(json.loads(sys.stdin.read()))))
    else:
        sys.exit("usage: python -m workers.grpo_config fields|check")
