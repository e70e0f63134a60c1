"""A few GRPO steps on CUDA in bf16 through Trainyard's adapter and recorder: full fine-tuning and LoRA, with the tiny
model and a random-init model of the same architecture at the ~0.5B shape (Qwen2.5-0.5B's layers, the tiny model's
vocabulary). Prints step time, peak GPU memory and tokens/s for each; the JSON line last compares LoRA's step time
on the 0.5B shape with full fine-tuning's (the baseline, measured in the same run).

Needs nothing from the Hub or a package index: torch, transformers, accelerate, peft and TRL as installed, the tiny
model built here (cached by its recipe), a guess-number server from this repository. Without CUDA it says so and
exits 0; `--device cpu` runs the tiny model's cases for one step each, to check the path on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from smoke import HELP, smoke_marked

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = Path(tempfile.mkdtemp(prefix="trainyard-bench-gpu-"))
os.environ["TRAINYARD_DATA_DIR"] = str(DATA)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.pop("DATABASE_URL", None)
os.environ.pop("REDIS_URL", None)
os.environ["TRAINYARD_TRUST_ON_ADD"] = "0"

# Qwen2.5-0.5B's transformer shape (its 151k vocabulary aside: the tiny model's tokenizer is used).
HALF_B = {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
          "num_key_value_heads": 2, "head_dim": 64}  # fmt: skip


def half_b_model(tiny: Path, out: Path) -> Path:
    """A random-init model of the ~0.5B shape with the tiny model's tokenizer and chat template."""
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    base = Qwen3Config.from_pretrained(tiny)
    config = Qwen3Config(**{**base.to_dict(), **HALF_B})
    model = Qwen3ForCausalLM(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def step_probe():
    import torch
    from transformers import TrainerCallback

    class Probe(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.tokens: list[float] = []
            self._t = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self._t = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self._t)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "num_tokens" in logs:
                self.tokens.append(float(logs["num_tokens"]))

    return Probe()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help=HELP + " (the CPU path, one step)")
    args = parser.parse_args()
    if args.smoke:
        args.device = "cpu"

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here: nothing to measure (run it on a GPU machine; --device cpu checks the path)")
        print(json.dumps({"metric": "gpu_lora_step_seconds_0.5b", "value": None, "unit": "s", "goal": "runs",
                          "baseline": None, "skipped": "no CUDA device"}))  # fmt: skip
        return
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    # On a GPU the first step warms its kernels up and is not measured; the CPU path checks the path: one step in all.
    max_steps = args.steps + 1 if args.device == "cuda" else 1

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from webapp.core.embedded_redis import ensure_running, stop

    ensure_running(Path(settings.EMBEDDED_REDIS_SOCKET))
    call_command("migrate", verbosity=0)

    from datasets import Dataset
    from transformers import AutoTokenizer

    from envs.adapter import tool_env_class
    from webapp.accounts.models import Team
    from webapp.catalog.deployments import provider_get, version_source
    from webapp.catalog.services import builtins_register
    from webapp.runs.grpo import GRPOSettings
    from webapp.runs.models import Run
    from webapp.runs.services import run_create
    from workers.models.tiny import ensure_tiny_model
    from workers.training.callbacks import run_reward_and_callback
    from workers.training.concurrent_tools import concurrent_tools_trainer
    from workers.training.dataset import build_dataset_rows
    from workers.training.grpo_config import grpo_config, lora_config

    tiny = ensure_tiny_model(progress=lambda m, f: print(f"… {m}", file=sys.stderr))
    models = {"tiny": tiny}
    if args.device == "cuda":
        models["0.5b-shape"] = half_b_model(tiny, DATA / "half-b")
    team = Team.objects.create(name="bench", slug="bench")
    version = next(v for v in builtins_register(team=team, user=None) if v.environment.slug == "guess-number")
    provider = provider_get("process")
    deployment = provider.provision(version_source(version), replicas=1)
    results = {}
    try:
        for model_label, path in models.items():
            for mode in ("full", "lora"):
                config = {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 256,
                          "max_tool_calling_iterations": 4, "max_steps": max_steps, "save_steps": 100_000,
                          "learning_rate": 1e-5, "lora_r": 16 if mode == "lora" else 0, "lora_alpha": 32}  # fmt: skip
                settings_ = GRPOSettings.from_dict(config).as_dict()
                run = run_create(team=team, user=None, env_version=version, config=settings_, start=False,
                                 trust_override_reason="gpu bench: our own built-in guess-number, not checked here; "
                                                       "what is measured is the GPU's step time")  # fmt: skip
                Run.objects.filter(pk=run.pk).update(deployment=deployment.as_dict())
                env_class = tool_env_class(name="guess-number", tools=version.tools, endpoints=deployment.endpoints)
                reward, record = run_reward_and_callback(run, threading.Event())
                probe = step_probe()
                tokenizer = AutoTokenizer.from_pretrained(path)
                dataset = Dataset.from_list(build_dataset_rows(run, [t["name"] for t in version.tools]))
                if torch.cuda.is_available():
                    torch.cuda.reset_peak_memory_stats()
                started = time.perf_counter()
                trainer = concurrent_tools_trainer()(
                    model=str(path), reward_funcs=[reward], args=grpo_config(settings_, DATA / f"{model_label}-{mode}"),
                    train_dataset=dataset, processing_class=tokenizer, environment_factory=env_class,
                    callbacks=[record, probe], peft_config=lora_config(settings_),
                )  # fmt: skip
                trainer.train()
                wall = time.perf_counter() - started
                measured = probe.times[1:] or probe.times  # the first step warms kernels up
                peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0
                tokens = probe.tokens[-1] if probe.tokens else 0.0
                results[f"{model_label} {mode}"] = {
                    "step_s": round(sum(measured) / len(measured), 3), "peak_gpu_gib": round(peak, 2),
                    "tokens_per_s": round(tokens / wall, 1), "dtype": str(trainer.model.dtype),
                    "episodes": run.episodes.count(),
                }  # fmt: skip
                print(f"{model_label} {mode}: {results[f'{model_label} {mode}']}", file=sys.stderr)
                del trainer
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
    finally:
        provider.teardown(deployment)
        from webapp.live.publish import close_layer

        close_layer()
        stop(Path(settings.EMBEDDED_REDIS_SOCKET))
    key = "0.5b-shape" if "0.5b-shape" in models else "tiny"
    print(
        json.dumps(
            smoke_marked(
                {
                    "metric": f"gpu_lora_step_seconds_{key}",
                    "value": results[f"{key} lora"]["step_s"],
                    "unit": "s",
                    "goal": "finishes within 10 minutes",
                    "baseline": results[f"{key} full"]["step_s"],
                    "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                    "results": results,
                }
            )
        )
    )


if __name__ == "__main__":
    main()
