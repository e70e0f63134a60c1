"""A model name, as a run or an evaluation gives it, resolved to what `from_pretrained` takes
(webapp.artifacts.model_names says what the names mean). The trainer and the evaluator both call it."""

from __future__ import annotations


def _say(message: str, fraction: float) -> None:
    print(message, flush=True)  # the trainer's or evaluator's log: a pull from the store shows there


def model_path(model_name: str, team) -> str:
    """The folder (or Hub id) of `model_name` as `team` sees it, on this host: the tiny model (pulled from the
    artifact store, or built here first when nobody has), a warm start (pulled), a run's saved model (pulled; a LoRA
    adapter merged into its base first), or the name as it is."""
    from webapp.artifacts.model_names import TINY_MODEL_ALIASES, WARMSTART_NAME, warmstart_dir
    from webapp.catalog.selectors import warmstart_version_for
    from workers.models.published import model_pull, tiny_model
    from workers.models.tiny import model_current

    if model_name in TINY_MODEL_ALIASES:
        return str(tiny_model(progress=_say))
    if WARMSTART_NAME.match(model_name):
        version = warmstart_version_for(model_name, team)
        path = warmstart_dir(version) if version is not None else None
        if path is None or not (model_current(path) or model_pull(path, _say)):
            where = model_name.split("@", 1)[1].replace(":", " --version ", 1)
            raise RuntimeError(f"{model_name} is not warm-started (not in the artifact store): run `manage.py "
                               f"model warmstart --env {where}`")  # fmt: skip
        return str(path)
    from webapp.artifacts.saved_models import saved_model_resolve

    saved = saved_model_resolve(model_name, team=team)
    if saved is not None:  # a run's checkpoint or final model; an adapter is merged into its base first
        from workers.models.export import adapter_base_name, trainable_path

        return str(trainable_path(saved, base=lambda: model_path(adapter_base_name(saved), team), progress=_say))
    return model_name  # a Hub id or a local path: from_pretrained takes both
