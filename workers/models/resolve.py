"""A model name, as a run or an evaluation gives it, resolved to what `from_pretrained` takes
(webapp.artifacts.model_names says what the names mean). The trainer and the evaluator both call it."""

from __future__ import annotations


def model_path(model_name: str, team) -> str:
    """The folder (or Hub id) of `model_name` as `team` sees it: the tiny model (built here first when missing), a
    warm start, a run's saved model (a LoRA adapter merged into its base first), or the name as it is."""
    from webapp.artifacts.model_names import TINY_MODEL_ALIASES, WARMSTART_NAME, warmstart_dir, warmstart_version_for
    from workers.models.tiny import model_current

    if model_name in TINY_MODEL_ALIASES:
        from workers.models.tiny import ensure_tiny_model

        return str(ensure_tiny_model())
    if WARMSTART_NAME.match(model_name):
        version = warmstart_version_for(model_name, team)
        path = warmstart_dir(version) if version is not None else None
        if path is None or not model_current(path):
            raise RuntimeError(f"{model_name} is not warm-started on this machine: run `manage.py model warmstart "
                               f"--env {model_name.split('@', 1)[1].replace(':', ' --version ', 1)}`")  # fmt: skip
        return str(path)
    from webapp.artifacts.saved_models import saved_model_resolve

    saved = saved_model_resolve(model_name, team=team)
    if saved is not None:  # a run's checkpoint or final model; an adapter is merged into its base first
        from workers.models.export import trainable_path

        return str(trainable_path(saved))
    return model_name  # a Hub id or a local path: from_pretrained takes both
