"""A saved model as a folder this host can load: pulled from the artifact store once (or taken from this host's own
run folder when it trained the run), a full model as it is, a LoRA adapter merged into its base model on request
(peft's merge_and_unload). Training from an adapter starts from the merged model, kept in this host's cache so that
a second run from the same checkpoint does not merge again."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

from webapp.artifacts.layout import (
    CHECKPOINT_MARKER,
    FINAL_MARKER,
    pulled_dir,
    run_checkpoints_dir,
    run_final_dir,
)
from webapp.artifacts.saved_models import FINAL, SavedModel
from webapp.artifacts.store import artifact_store

Progress = Callable[[str, float], None]


def _quiet(message: str, fraction: float) -> None:
    pass


def saved_model_folder(saved: SavedModel, progress: Progress = _quiet) -> Path:
    """This host's copy of a saved model. A `final` may be replaced (a resumed run ends again), so a copy is named
    by its marker's content; the run's own folder serves when this host wrote that very content."""
    store = artifact_store()
    marker = FINAL_MARKER if saved.name == FINAL else CHECKPOINT_MARKER
    stored = store.read_bytes(f"{saved.key}/{marker}")
    own = run_final_dir(saved.run_id) if saved.name == FINAL else run_checkpoints_dir(saved.run_id) / saved.name
    if (own / marker).exists() and (own / marker).read_bytes() == stored:
        return own
    local = pulled_dir(saved.key).with_name(f"{saved.name}-{hashlib.sha256(stored).hexdigest()[:12]}")
    if (local / marker).exists():
        return local
    local.parent.mkdir(parents=True, exist_ok=True)
    with open(local.parent / f".{local.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs starting from it on one host pull it once
        if not (local / marker).exists():
            progress(f"pulling {saved.model_name} ({saved.size_bytes / 1e6:.0f} MB) from the artifact store", 0.1)
            store.get_tree(saved.key, local)
    return local


def merge_adapter(saved: SavedModel, out: Path, *, base: str, progress: Progress = _quiet) -> Path:
    """Base model + adapter → one full model with its tokenizer in `out` (written beside it, then renamed). `base` is
    the base model as this host has it: the adapter's own record names a folder of the host that trained it."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter = saved_model_folder(saved, progress)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    progress(f"loading {base} with the adapter", 0.2)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(adapter))
    progress("merging the adapter into the base weights", 0.6)
    merged = model.merge_and_unload()
    progress("writing the merged model", 0.8)
    merged.save_pretrained(str(partial))
    AutoTokenizer.from_pretrained(str(adapter)).save_pretrained(str(partial))
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    progress("done", 1.0)
    return out


def trainable_path(saved: SavedModel, *, base: Callable[[], str], progress: Progress = _quiet) -> Path:
    """What from_pretrained can start a new run from: the folder itself, or the adapter merged into its base
    (`base()` resolves the run's own model on this host; only called when a merge is needed)."""
    if not saved.adapter:
        return saved_model_folder(saved, progress)
    stored = artifact_store().read_bytes(f"{saved.key}/{FINAL_MARKER if saved.name == FINAL else CHECKPOINT_MARKER}")
    out = pulled_dir(saved.key).with_name(f"{saved.name}-merged-{hashlib.sha256(stored).hexdigest()[:12]}")
    if not (out / "config.json").exists():
        merge_adapter(saved, out, base=base(), progress=progress)
    return out


def export_model(saved: SavedModel, out: Path, *, merge: bool, base: Callable[[], str], progress: Progress = _quiet
                 ) -> Path:  # fmt: skip
    """Copy a saved model to `out` (the adapter alone, or merged with `merge`), without optimizer state."""
    if merge and saved.adapter:
        return merge_adapter(saved, out, base=base(), progress=progress)
    folder = saved_model_folder(saved, progress)
    skip = shutil.ignore_patterns("optimizer.pt", "scheduler.pt", "rng_state*.pth", "training_args.bin")
    progress("copying", 0.3)
    shutil.copytree(folder, out, ignore=skip, dirs_exist_ok=True)
    progress("done", 1.0)
    return out


def adapter_base_name(saved: SavedModel) -> str:
    """The model name the adapter's run started from (`tiny-local`, a Hub id, `run:3/final`, ...)."""
    from webapp.runs.models import Run

    return Run.objects.values_list("model_name", flat=True).get(pk=saved.run_id)
