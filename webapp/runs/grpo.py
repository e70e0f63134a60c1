"""GRPO settings of a run: defaults, groups, help text and validation in one place (forms, services and the CLI
use it). The curated settings each have a field; everything else TRL's `GRPOConfig` takes goes in `advanced`,
checked against TRL's own fields (webapp.runs.grpo_fields)."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from django.core.exceptions import ValidationError

from webapp.evals.episode_budget import DEFAULT_MAX_TOKENS
from webapp.evals.seeds import DEFAULT_EVAL_SEEDS, seeds_parse

LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "luspo", "vespo")
SCALE_REWARDS = ("group", "batch", "none")
GENERATION_BACKENDS = ("hf", "continuous_batching", "vllm_colocate", "vllm_server")
VLLM_BACKENDS = ("vllm_colocate", "vllm_server")
CLUSTERS = ("", "slurm")  # "": this deployment's own GPU workers
SLURM_NAME = re.compile(r"[A-Za-z0-9_.,:+-]*")  # a partition, account or QOS as Slurm spells them


@dataclass(frozen=True)
class GRPOSettings:
    # optimisation. The learning rate keeps a warm-started model calling its tools: at 5e-4 one GRPO step taught the
    # tiny model to stop calling them (OpenEnv's maze: 1.75 calls per episode, then none; the coin game; the demo's
    # guess-number at 3e-4); at 5e-5 it kept calling through the run (maze, given 1,024 completion tokens for its
    # long observations: 1.6 to 1.9 accepted calls per episode on four seeds).
    learning_rate: float = 5e-5
    per_device_train_batch_size: int = 4
    gradient_accumulation_steps: int = 1
    max_steps: int = 20
    seed: int = 42
    save_steps: int = 10
    # sampling
    num_generations: int = 4
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_completion_length: int = DEFAULT_MAX_TOKENS  # room for several calls and their answers: episode_budget
    max_tool_calling_iterations: int = 6
    # loss
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    beta: float = 0.0
    epsilon: float = 0.2
    epsilon_high: float = 0.0
    num_iterations: int = 1
    mask_truncated_completions: bool = False
    # generation
    generation_backend: str = "hf"
    vllm_server_url: str = ""
    gpus: int = 0
    processes: int = 1
    # where it trains: this deployment's workers, or a Slurm cluster (the queue's defaults where 0 or empty)
    cluster: str = ""
    nodes: int = 1
    slurm_partition: str = ""
    slurm_account: str = ""
    slurm_qos: str = ""
    slurm_time_minutes: int = 0
    slurm_cpus_per_task: int = 0
    slurm_mem_gb: int = 0
    # LoRA (rank 0: full fine-tuning)
    lora_r: int = 0
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    lora_target_modules: str = "all-linear"
    # environment
    step_timeout: float = 30.0
    # evals during training (0: none): the policy measured on held-out seeds at step 0, every eval_steps, and at the end
    eval_steps: int = 0
    eval_seeds: str = ""
    eval_k: int = 1
    eval_greedy: bool = True
    # recording: GRPO groups per step whose completions are kept token by token (from the trainer's own forward pass)
    token_trace_groups: int = 1
    # anything else of TRL's GRPOConfig, checked against its fields
    advanced: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> GRPOSettings:
        data = dict(data or {})
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValidationError(
                {"config": f"Unknown GRPO settings: {', '.join(unknown)} (TRL's other settings go in 'advanced')."}
            )
        values: dict[str, Any] = {}
        errors: dict[str, str] = {}
        defaults = cls()
        for name, value in data.items():
            try:
                values[name] = _coerce(name, getattr(defaults, name), value)
            except ValueError as exc:
                errors[name] = str(exc)
        if errors:
            raise ValidationError(errors)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        errors: dict[str, str] = {}
        for name, (lo, hi) in BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                errors[name] = f"{name} must be a finite number."
            elif not lo <= value <= hi:
                errors[name] = f"{name} must be between {lo:,} and {hi:,}, not {value:,}."
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                errors[name] = f"{name} must be one of {', '.join(allowed)}, not {str(getattr(self, name))[:40]!r}."
        if errors:
            raise ValidationError(errors)
        if self.num_generations < 2:
            errors["num_generations"] = "GRPO compares completions: num_generations must be at least 2."
        generation_batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if generation_batch % max(1, self.num_generations):
            errors["per_device_train_batch_size"] = (
                f"batch size x gradient accumulation ({generation_batch}) must be divisible by num_generations "
                f"({self.num_generations})."
            )
        if self.processes > 1 and self.per_device_train_batch_size % max(1, self.num_generations):
            errors["processes"] = (
                f"with {self.processes} processes, each rank's batch ({self.per_device_train_batch_size}) must hold "
                f"whole GRPO groups: make it a multiple of num_generations ({self.num_generations})."
            )
        if self.gpus and self.processes > self.gpus:
            errors["processes"] = f"{self.processes} processes on {self.gpus} GPUs: at most one process a GPU."
        if self.nodes > 1 and self.cluster != "slurm":
            errors["nodes"] = "several nodes are a Slurm cluster's: set cluster to slurm (a worker runs on one host)."
        for name in ("slurm_partition", "slurm_account", "slurm_qos"):
            value = getattr(self, name)
            if value and (len(value) > 64 or not SLURM_NAME.fullmatch(value)):
                errors[name] = (f"{name} must be a Slurm name (letters, digits, _ . , : + -; at most 64), "
                                f"not {value[:40]!r}.")  # fmt: skip
            elif value and self.cluster != "slurm":
                errors[name] = f"{name} is a Slurm setting: set cluster to slurm, or leave it empty."
        if self.learning_rate <= 0:
            errors["learning_rate"] = "learning_rate must be above 0."
        if self.temperature <= 0:
            errors["temperature"] = "temperature must be above 0."
        if self.top_p <= 0:
            errors["top_p"] = "top_p must be above 0 (1 keeps every token)."
        if self.epsilon_high and self.epsilon_high < self.epsilon:
            errors["epsilon_high"] = f"epsilon_high ({self.epsilon_high}) is below epsilon ({self.epsilon})."
        if self.vllm_server_url and self.generation_backend != "vllm_server":
            errors["vllm_server_url"] = "a vLLM server URL is only used with the vllm_server generation backend."
        if self.generation_backend == "vllm_server" and not self.vllm_server_url:
            errors["vllm_server_url"] = ("give the URL of a running `vllm serve` (starting one on the worker's own "
                                         "GPUs is not built yet; vllm_colocate shares the training GPU).")  # fmt: skip
        if self.vllm_server_url and not self.vllm_server_url.startswith(("http://", "https://")):
            errors["vllm_server_url"] = "the vLLM server URL must start with http:// or https://."
        if self.eval_seeds or self.eval_steps:
            try:
                seeds_parse(self.eval_seeds or DEFAULT_EVAL_SEEDS, field="eval_seeds")
            except ValidationError as exc:
                errors.update({k: v[0] for k, v in exc.message_dict.items()})
        if self.eval_steps and self.eval_k > self.per_device_train_batch_size * self.gradient_accumulation_steps:
            errors["eval_k"] = (f"eval_k ({self.eval_k}) is above the generation batch ("
                                f"{self.per_device_train_batch_size} x {self.gradient_accumulation_steps}) the run's "
                                "sessions are sized for.")  # fmt: skip
        if not lora_modules(self.lora_target_modules):
            errors["lora_target_modules"] = "name the modules LoRA adapts, e.g. all-linear or q_proj,v_proj."
        if errors:
            raise ValidationError(errors)
        from webapp.runs.grpo_fields import advanced_check

        advanced_check(self.advanced, curated=set(GRPOSettings.__dataclass_fields__) - {"advanced"})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def uses_lora(self) -> bool:
        return self.lora_r > 0


def _coerce(name: str, default: Any, value: Any) -> Any:
    """One setting's value as its kind: numbers from text, booleans from checkboxes, the advanced box from JSON or
    YAML text. Refusals name the setting."""
    if isinstance(default, dict):
        from webapp.runs.grpo_fields import advanced_parse

        return advanced_parse(value)
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in {"true", "1", "on", "yes"}:
            return True
        if text in {"false", "0", "off", "no", ""}:
            return False
        raise ValueError(f"{name} must be true or false, not {str(value)[:40]!r}.")
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be text, not {type(value).__name__}.")
        if len(value) > TEXT_LIMIT or "\x00" in value:
            raise ValueError(f"{name} must be at most {TEXT_LIMIT} characters of text.")
        return value.strip()
    noun = "whole number" if isinstance(default, int) else "number"
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
        coerced = float(value) if isinstance(default, float) else int(value)
        if isinstance(default, int) and number != coerced:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a {noun}, not {str(value)[:40]!r}.") from None
    return coerced


def lora_modules(text: str) -> str | list[str]:
    """`all-linear` (PEFT's shorthand) or a comma-separated list of module names."""
    text = text.strip()
    if text == "all-linear":
        return text
    names = [part.strip() for part in text.split(",") if part.strip()]
    return names if all(part.replace("_", "").replace(".", "").isalnum() for part in names) else []


TEXT_LIMIT = 500

# Every numeric setting's bounds (inclusive): generous for real runs, small enough that nothing absurd is queued and
# every value fits its database column. Forms, the API and the CLI all check against these.
BOUNDS: dict[str, tuple[int | float, int | float]] = {
    "learning_rate": (0.0, 1.0),
    "num_generations": (1, 256),
    "per_device_train_batch_size": (1, 1024),
    "gradient_accumulation_steps": (1, 1024),
    "max_completion_length": (1, 131_072),
    "max_tool_calling_iterations": (1, 1000),
    "max_steps": (1, 1_000_000),
    "beta": (0.0, 100.0),
    "temperature": (0.0, 5.0),
    "top_p": (0.0, 1.0),
    "top_k": (0, 1_000_000),
    "epsilon": (0.0, 10.0),
    "epsilon_high": (0.0, 10.0),
    "num_iterations": (1, 64),
    "gpus": (0, 64),
    "processes": (1, 64),
    "nodes": (1, 64),
    "slurm_time_minutes": (0, 43_200),
    "slurm_cpus_per_task": (0, 1024),
    "slurm_mem_gb": (0, 16_384),
    "lora_r": (0, 4096),
    "lora_alpha": (1, 65_536),
    "lora_dropout": (0.0, 0.9),
    "seed": (0, 2**32 - 1),
    "save_steps": (1, 1_000_000),
    "step_timeout": (0.1, 3600.0),
    "eval_steps": (0, 1_000_000),
    "eval_k": (1, 64),
    "token_trace_groups": (0, 64),
}

CHOICES: dict[str, tuple[str, ...]] = {
    "loss_type": LOSS_TYPES,
    "scale_rewards": SCALE_REWARDS,
    "generation_backend": GENERATION_BACKENDS,
    "cluster": CLUSTERS,
}

# The form's groups, in order (a setting in no group is not shown as a field).
GROUPS: dict[str, tuple[str, ...]] = {
    "Sampling": ("num_generations", "temperature", "top_p", "top_k", "max_completion_length",
                 "max_tool_calling_iterations"),
    "Loss": ("loss_type", "scale_rewards", "beta", "epsilon", "epsilon_high", "num_iterations",
             "mask_truncated_completions"),
    "Optimisation": ("learning_rate", "per_device_train_batch_size", "gradient_accumulation_steps", "max_steps",
                     "seed", "save_steps"),
    "Generation and resources": ("generation_backend", "vllm_server_url", "gpus", "processes", "cluster", "nodes",
                                 "slurm_partition", "slurm_account", "slurm_qos", "slurm_time_minutes",
                                 "slurm_cpus_per_task", "slurm_mem_gb"),
    "LoRA": ("lora_r", "lora_alpha", "lora_dropout", "lora_target_modules"),
    "Environment": ("step_timeout",),
    "Evaluation": ("eval_steps", "eval_seeds", "eval_k", "eval_greedy"),
    "Recording": ("token_trace_groups",),
    "Advanced": ("advanced",),
}  # fmt: skip

HELP = {
    "learning_rate": "Adam learning rate.",
    "num_generations": "Completions sampled per prompt (the GRPO group size G).",
    "per_device_train_batch_size": "Rollouts per step per device; divisible by num_generations.",
    "gradient_accumulation_steps": "Steps to accumulate before an optimizer update.",
    "max_completion_length": "Token budget for all turns of an episode together.",
    "max_tool_calling_iterations": "Most tool-call turns in one episode.",
    "max_steps": "Optimizer steps of the run.",
    "beta": "KL coefficient against the reference model (0 disables the reference model).",
    "temperature": "Sampling temperature of rollouts.",
    "top_p": "Nucleus sampling: keep the most likely tokens up to this probability mass (1: all).",
    "top_k": "Keep only the k most likely tokens (0: no limit).",
    "loss_type": "dapo (TRL's default), grpo, dr_grpo (Dr. GRPO), bnpo, cispo, sapo, luspo, vespo.",
    "scale_rewards": "Divide advantages by the reward std of the group, of the batch, or none (Dr. GRPO).",
    "epsilon": "Lower clipping bound of the importance ratio.",
    "epsilon_high": "Upper clipping bound (DAPO's clip-higher, e.g. 0.28); 0: the same as epsilon.",
    "num_iterations": "Updates per generated batch (μ); above 1 reuses rollouts with clipping.",
    "mask_truncated_completions": "Leave episodes cut off by max_completion_length out of the loss (DAPO).",
    "generation_backend": "hf: transformers generate; continuous_batching: transformers' engine; vllm_colocate: "
    "vLLM on the training GPU; vllm_server: a vLLM server (needs CUDA and vllm on the worker).",
    "vllm_server_url": "With vllm_server: the URL of a running `vllm serve` (e.g. http://gpu-box:8000).",
    "gpus": "GPUs the run needs on one worker (0: any worker, CPU included). Refused if no live worker has them.",
    "processes": "Trainer processes (ranks): one per GPU of the run's set; on a CPU worker, CPU ranks over gloo. Each "
    "rank plays its share of the batch, so a step holds batch x processes sessions.",
    "cluster": "Where it trains: empty for this deployment's own workers, slurm to hand it to the Slurm cluster "
    "(a worker on its login node submits it with sbatch; gpus and processes are then per node).",
    "nodes": "Slurm nodes of the run (torchrun across them); 1 anywhere else.",
    "slurm_partition": "Slurm partition (empty: the queue's default).",
    "slurm_account": "Slurm account to charge (empty: the queue's default).",
    "slurm_qos": "Slurm QOS (empty: the queue's default).",
    "slurm_time_minutes": "The job's time limit in minutes (0: the queue's default). A job that reaches it fails "
    "its run with that reason; resume goes on from the last checkpoint.",
    "slurm_cpus_per_task": "CPUs per node for the trainer (0: the queue's default).",
    "slurm_mem_gb": "Memory per node in GB (0: the queue's default).",
    "lora_r": "LoRA rank; 0 trains every weight (full fine-tuning).",
    "lora_alpha": "LoRA scaling (alpha / r multiplies the adapter's update).",
    "lora_dropout": "Dropout on the LoRA layers' input.",
    "lora_target_modules": "all-linear, or module names separated by commas (q_proj,k_proj,v_proj,o_proj).",
    "seed": "Seed of the trainer and of the dataset's environment seeds.",
    "save_steps": "Save a checkpoint every this many steps (resume starts from the last).",
    "step_timeout": "Seconds one environment step may take before the episode is cut off.",
    "eval_steps": "Evaluate the policy on held-out seeds at step 0, every this many steps and at the end (0: never).",
    "eval_seeds": "Held-out seeds, e.g. 1000000-1000031 (disjoint from the training seeds, checked); empty: "
    f"{DEFAULT_EVAL_SEEDS}.",
    "eval_k": "Samples per held-out seed (pass@k); with greedy decoding 1 is enough.",
    "eval_greedy": "Evaluate with greedy decoding (unchecked: the run's temperature and top_p).",
    "token_trace_groups": "GRPO groups per step recorded token by token (advantage, log-probability, entropy, loss "
    "mask) from the trainer's own forward pass, for the trajectory viewer; 0: none.",
    "advanced": 'Any other GRPOConfig field as JSON or YAML, e.g. {"importance_sampling_level": "sequence", '
    '"weight_decay": 0.01}. Checked against TRL\'s own fields.',
}


def settings_flat(config: dict[str, Any]) -> dict[str, Any]:
    """Every setting a run trained with, for its page and the compare diff: a setting a run predates at its default
    (what the trainer used), the advanced box one row per key (`advanced.weight_decay`)."""
    flat = {**GRPOSettings().as_dict(), **config}
    advanced = flat.pop("advanced", None) or {}
    flat.update({f"advanced.{key}": value for key, value in sorted(advanced.items())})
    return flat
