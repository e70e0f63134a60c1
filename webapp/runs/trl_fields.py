"""TRL's own GRPOConfig fields, for the web process, which never imports TRL: the table (name → JSON types, choices,
default, help) is read from the installed TRL by running this module (`python -m webapp.runs.trl_fields`, ~5 s) and
kept in the cache folder under TRL's version, so an upgrade reads its fields again. And `OWNED`: the fields the worker
decides, never a run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]

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


def trl_version() -> str:
    try:
        return version("trl")
    except PackageNotFoundError:
        return "absent"


@cache
def _table_read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["fields"]


def grpo_config_fields() -> dict[str, Any]:
    """name → {types, choices, default, help} of TRL's GRPOConfig (read once per TRL version, then cached)."""
    from webapp.artifacts.layout import trl_fields_file

    path = trl_fields_file(trl_version())
    if not path.exists():
        result = subprocess.run([sys.executable, "-m", "webapp.runs.trl_fields"], cwd=REPO_ROOT, capture_output=True,
                                text=True, timeout=120)  # fmt: skip
        if result.returncode:
            raise RuntimeError(f"could not read TRL's GRPOConfig fields: {result.stderr[-800:]}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{id(result)}.tmp")
        tmp.write_text(result.stdout.strip().splitlines()[-1])
        tmp.replace(path)
    return _table_read(path)


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


if __name__ == "__main__":
    print(json.dumps(fields_table()))
