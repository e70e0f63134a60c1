"""A saved model as a folder others can load: a full model as it is, a LoRA adapter merged into its base model on
request (peft's merge_and_unload). Training from an adapter checkpoint starts from the merged model, kept in the
run's folder so that a second run from the same checkpoint does not merge again."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from webapp.artifacts.layout import run_merged_dir
from webapp.artifacts.saved_models import SavedModel


def adapter_base(saved: SavedModel) -> str:
    return json.loads((saved.path / "adapter_config.json").read_text())["base_model_name_or_path"]


def merge_adapter(saved: SavedModel, out: Path, progress: Callable[[str, float], None] = lambda m, f: None) -> Path:
    """Base model + adapter → one full model with its tokenizer in `out` (written beside it, then renamed)."""
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoTokenizer

    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    progress(f"loading {adapter_base(saved)} with the adapter", 0.2)
    model = AutoPeftModelForCausalLM.from_pretrained(str(saved.path))
    progress("merging the adapter into the base weights", 0.6)
    merged = model.merge_and_unload()
    progress("writing the merged model", 0.8)
    merged.save_pretrained(str(partial))
    AutoTokenizer.from_pretrained(str(saved.path)).save_pretrained(str(partial))
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    progress("done", 1.0)
    return out


def trainable_path(saved: SavedModel) -> Path:
    """What from_pretrained can start a new run from: the folder itself, or the adapter merged into its base."""
    if not saved.adapter:
        return saved.path
    out = run_merged_dir(saved.run_id, saved.name)
    if not (out / "config.json").exists():
        merge_adapter(saved, out)
    return out


def export_model(saved: SavedModel, out: Path, *, merge: bool, progress=lambda m, f: None) -> Path:
    """Copy a saved model to `out` (the adapter alone, or merged with `merge`), without optimizer state."""
    if merge and saved.adapter:
        return merge_adapter(saved, out, progress)
    skip = shutil.ignore_patterns("optimizer.pt", "scheduler.pt", "rng_state*.pth", "training_args.bin")
    progress("copying", 0.3)
    shutil.copytree(saved.path, out, ignore=skip, dirs_exist_ok=True)
    progress("done", 1.0)
    return out
