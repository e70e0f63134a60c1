"""From a run's settings to TRL's `GRPOConfig` (and `peft`'s `LoraConfig`): the one translation the trainer uses and
the pre-flight checks. Importing this module imports neither TRL nor torch; the functions that need them import
them. What a run may never set (`OWNED`) is the web's rule (webapp.runs.trl_fields), applied here too.

`python -m workers.training.grpo_config check` reads settings as JSON on stdin, builds the real GRPOConfig (TRL's own
checks run in its __post_init__) and prints one JSON line: ok, or the reason (the pre-flight runs it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


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
    if command == "fields":  # the old entry point of the table the web reads (webapp.runs.trl_fields)
        from webapp.runs.trl_fields import fields_table

        print(json.dumps(fields_table()))
    elif command == "check":
        print(json.dumps(check(json.loads(sys.stdin.read()))))
    else:
        sys.exit("usage: python -m workers.training.grpo_config fields|check")
