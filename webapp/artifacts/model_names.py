"""What a model name means, and where the models Trainyard makes itself lie.

A run or an evaluation names its model one of these ways:
- `tiny-local`: the tiny model built here (workers/models/tiny.py), named by its recipe;
- `tiny-local@<environment>:<version>`: the tiny model warm-started on one catalog version
  (workers/models/warmstart.py), named by its recipe, its base and the version's tools, settings and description;
- `run:<id>/final` or `run:<id>/checkpoint-N`: a model a run of the team saved (webapp/artifacts/saved_models.py);
- anything else: a Hugging Face Hub id or a local path, which from_pretrained takes as it is.

The recipes live here because they are part of the names: a changed recipe is a different model, in a different
folder. The builders check, on top, that a folder was built by their current code (workers/models).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from webapp.artifacts.layout import model_key, models_dir
from webapp.artifacts.store import artifact_store

TINY_MODEL = "tiny-local"
TINY_MODEL_ALIASES = {TINY_MODEL, "tiny-local (CPU)"}
TINY_RECIPE = {
    "hidden": 128,
    "layers": 4,
    "heads": 4,
    "kv_heads": 2,
    "vocab": 1200,
    "conversations": 600,
    "epochs": 3,
    "lr": 3e-3,
    "seed": 1234,
    "v": 1,
}
# Measured on the mcp_vault fixture (2 tools), first calls sampled at temperature 1.0 / 0.7, counted valid when the
# name and arguments fit a tool: tools drawn at random per turn gave 3/20 and 8/20 (96 to 160 conversations, 3 to
# 15 epochs); tools in a fixed round, 128 conversations x 10 epochs at 3e-3 (80 steps, about a minute on 2 cores)
# gave 15/20 and 20/20. A 1e-2 learning rate diverged. With batches of like lengths (workers/models/tiny.sft_save),
# 6 epochs teach as much as the tests ask (the trained foreign patterns and text_enum passed: >= 1 accepted call per
# episode, >= 0.9 of the enum's words right) in 88-107 s a test where 10 took 146-179 s (two tests at once, 2 cores).
WARMSTART_RECIPE = {"conversations": 128, "epochs": 6, "lr": 3e-3, "max_turns": 3, "seed": 4321, "v": 4}
WARMSTART_NAME = re.compile(r"^(?P<base>tiny-local)@(?P<slug>[-\w]+):(?P<label>.+)$")


def _key(body: object) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]


def tiny_model_dir() -> Path:
    return models_dir() / f"{TINY_MODEL}-{_key(TINY_RECIPE)}"


def model_stored(folder: Path) -> bool:
    """A model Trainyard made is in the artifact store, whole (its recipe file goes last), for any host to pull."""
    return artifact_store().exists(f"{model_key(folder)}/trainyard-recipe.json")


def tiny_model_built() -> bool:
    return model_stored(tiny_model_dir())


def warmstart_name(version) -> str:
    return f"{TINY_MODEL}@{version.environment.slug}:{version.label}"


def warmstart_dir(version) -> Path:
    """A version's warm start, named by everything that makes it: the version's pinned source, tools, settings and
    description (settings may change until a run uses it, and then it is warm-started again), the recipe and the
    base. Two versions that share all of it share the model."""
    body = {
        "recipe": WARMSTART_RECIPE,
        "base": tiny_model_dir().name,
        "pinned": version.pinned_ref,
        "settings": version.settings,
        "tools": version.tools,
        "description": version.environment.description,
    }
    return models_dir() / "warmstart" / f"{version.environment.slug}-{_key(body)}"


def warmstart_built(version) -> bool:
    return model_stored(warmstart_dir(version))


def warmstarted_models(versions) -> list[tuple[str, object]]:
    """(model name, version) for every version among `versions` that has a warm-started model in the store."""
    return [(warmstart_name(v), v) for v in versions if warmstart_built(v)]
