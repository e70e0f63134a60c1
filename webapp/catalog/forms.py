from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from envs.builtin import builtin_environments
from webapp.catalog.models import SourceKind, Visibility
from webapp.catalog.version_settings import assignments_parse, names_parse


def _tags(raw: str) -> list[str]:
    return sorted({t.strip().lower() for t in raw.split(",") if t.strip()})


def _reward_initial(rule: dict[str, Any]) -> dict[str, str]:
    """A user's choice shows as chosen; a rule the version was given (declared, detected) is the blank choice, which
    keeps it."""
    if rule.get("source") != "chosen":
        return {}
    field = rule.get("field") or "reward"
    return {"reward": rule.get("kind") or "", "reward_field": "" if field == "reward" else field}


class VersionSettingsForm(forms.Form):
    """A version's settings as text fields; `version_settings.settings_clean` checks them against the server."""

    env = forms.CharField(
        required=False, max_length=20_000, label="Server environment variables",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "OPENSPIEL_GAME=catch"}),
        help_text="NAME=value, one a line: the server's settings.",
    )  # fmt: skip
    fixed = forms.CharField(
        required=False, max_length=20_000, label="Fixed action fields",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": 'game_name="catch"'}),
        help_text="FIELD=JSON, one a line: sent with every call and hidden from the model.",
    )  # fmt: skip
    offered_tools = forms.CharField(
        required=False, max_length=5000, label="Tools the model is offered",
        help_text="Comma separated. Blank: every tool. A few of many keeps the prompt within a small model's reach.",
    )  # fmt: skip
    observation_fields = forms.CharField(
        required=False, max_length=2000, label="Observation fields the model reads",
        help_text="Comma separated. Blank: every declared field and metadata.",
    )  # fmt: skip
    reset_args = forms.CharField(
        required=False, max_length=2000, label="Dataset columns for reset()",
        help_text="Comma separated. Blank: every column but the prompt.",
    )  # fmt: skip
    reward = forms.ChoiceField(
        required=False, label="Reward", initial="",
        choices=[("", "as the environment says (its openenv.yaml, else what its server shows, else the sum)"),
                 ("sum", "the sum of step rewards"), ("final", "the final step's reward only"),
                 ("environment", "the environment's own (its rubric, through get_reward)")],
        help_text="Whose reward a run learns from. Evaluations use the same.",
    )  # fmt: skip
    reward_field = forms.CharField(
        required=False, max_length=100, label="Reward field",
        help_text="For the environment's own reward: the observation field its rubric fills (blank: reward).",
    )  # fmt: skip
    requirements = forms.CharField(
        required=False, max_length=10_000, label="Extra Python packages",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "open_spiel>=1.5"}),
        help_text="PyPI requirements, one a line, installed with what the folder declares (its own environment).",
    )  # fmt: skip

    def settings(self) -> dict[str, Any]:
        """The raw settings; a line that is not KEY=VALUE is a field error."""
        data = self.cleaned_data
        try:
            raw = {
                "env": assignments_parse(data.get("env") or "", field="env", json_values=False),
                "fixed": assignments_parse(data.get("fixed") or "", field="fixed", json_values=True),
                "offered_tools": names_parse(data.get("offered_tools")),
                "observation_fields": names_parse(data.get("observation_fields")),
                "reset_args": names_parse(data.get("reset_args")),
                "requirements": [
                    line.strip() for line in (data.get("requirements") or "").splitlines() if line.strip()
                ],
                "reward": (
                    {"kind": data.get("reward") or "environment", "field": data["reward_field"].strip()}
                    if (data.get("reward_field") or "").strip()
                    else data.get("reward")
                ),
            }
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                self.add_error(field, errors)
            raise
        return {k: v for k, v in raw.items() if v}

    @staticmethod
    def initial_for(settings: dict[str, Any]) -> dict[str, str]:
        return {
            "env": "\n".join(f"{k}={v}" for k, v in (settings.get("env") or {}).items()),
            "fixed": "\n".join(f"{k}={json.dumps(v)}" for k, v in (settings.get("fixed") or {}).items()),
            "offered_tools": ", ".join(settings.get("offered_tools") or []),
            "observation_fields": ", ".join(settings.get("observation_fields") or []),
            "reset_args": ", ".join(settings.get("reset_args") or []),
            "requirements": "\n".join(settings.get("requirements") or []),
            **_reward_initial(settings.get("reward") or {}),
        }


class VersionSourceForm(VersionSettingsForm):
    source_kind = forms.ChoiceField(choices=SourceKind.choices, initial=SourceKind.BUILTIN)
    source_ref = forms.CharField(
        max_length=500,
        label="Source",
        help_text="Built-in name (e.g. guess-number), a folder path on the worker, an image reference, a URL, or a "
        "git repository URL (https://…, file://…).",
    )
    git_ref = forms.CharField(required=False, max_length=200, label="Git ref",
                              help_text="Branch, tag or commit (git sources; blank: the default branch).")  # fmt: skip
    git_subdir = forms.CharField(required=False, max_length=300, label="Folder in the repository",
                                 help_text="e.g. envs/echo_env (git sources).")  # fmt: skip
    label = forms.CharField(max_length=50, initial="1.0.0", label="Version")
    capacity = forms.IntegerField(min_value=1, max_value=4096, initial=64,
                                  help_text="Sessions a replica may take (declared; measured when added)")  # fmt: skip

    field_order = ["source_kind", "source_ref", "git_ref", "git_subdir", "label", "capacity", "env", "fixed",
                   "offered_tools", "observation_fields", "reset_args", "reward", "reward_field",
                   "requirements"]  # fmt: skip

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind, ref = data.get("source_kind"), (data.get("source_ref") or "").strip()
        if kind == SourceKind.URL and not ref.startswith(("http://", "https://")):
            self.add_error("source_ref", "A URL source must start with http:// or https://.")
        if kind == SourceKind.GIT and not ref.startswith(
            ("http://", "https://", "file://", "ssh://", "git@", "git://")
        ):
            self.add_error("source_ref", "A git source is a repository URL (https://…, ssh://…, git@…, file://…).")
        if kind == SourceKind.BUILTIN and ref not in {b.slug for b in builtin_environments()}:
            names = ", ".join(b.slug for b in builtin_environments())
            self.add_error("source_ref", f"Built-in environments are: {names}.")
        data["source_ref"] = ref
        return data

    def service_arguments(self) -> dict[str, Any]:
        """Keyword arguments for environment_create/version_add (raises ValidationError on a bad setting line)."""
        data = self.cleaned_data
        return {
            "source_kind": data["source_kind"], "source_ref": data["source_ref"], "label": data["label"],
            "capacity": data["capacity"], "git_ref": (data.get("git_ref") or "").strip(),
            "git_subdir": (data.get("git_subdir") or "").strip(), "settings": self.settings(),
        }  # fmt: skip


class EnvironmentCreateForm(VersionSourceForm):
    name = forms.CharField(max_length=100)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000)
    tags = forms.CharField(required=False, max_length=500, help_text="Comma separated")
    visibility = forms.ChoiceField(choices=Visibility.choices, initial=Visibility.TEAM)

    field_order = ["name", "description", "tags", "visibility", *VersionSourceForm.field_order]

    def clean_tags(self) -> list[str]:
        return _tags(self.cleaned_data.get("tags", ""))

    def service_arguments(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {**super().service_arguments(), "name": data["name"], "description": data["description"],
                "tags": data["tags"], "visibility": data["visibility"]}  # fmt: skip


def _field_for(name: str, prop: dict[str, Any], required: bool) -> forms.Field:
    common = {"required": required, "help_text": prop.get("description", ""), "label": name}
    if "default" in prop:
        common["initial"] = prop["default"]
    if "enum" in prop:
        return forms.ChoiceField(choices=[(v, v) for v in prop["enum"]], **common)
    kind = prop.get("type")
    if kind == "integer":
        # Without bounds in the schema: what a JSON number holds exactly, so nothing huge reaches the server.
        lo, hi = prop.get("minimum", -(2**53)), prop.get("maximum", 2**53)
        return forms.IntegerField(min_value=lo, max_value=hi, **common)
    if kind == "number":
        return forms.FloatField(**common)
    if kind == "boolean":
        return forms.BooleanField(**{**common, "required": False})
    if kind == "string":
        return forms.CharField(max_length=prop.get("maxLength"), **common)
    return forms.JSONField(**common)


class ActionForm(forms.Form):
    """A form generated from one tool's parameters (the environment's action schema)."""

    def __init__(self, *args, tool: dict[str, Any], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.tool = tool
        parameters = tool.get("parameters", {})
        required = set(parameters.get("required", []))
        for name, prop in parameters.get("properties", {}).items():
            self.fields[name] = _field_for(name, prop, name in required)
        self.fields["seed"] = forms.IntegerField(required=False, initial=0, min_value=0, max_value=2**32 - 1,
                                                 help_text="Seed for reset()")  # fmt: skip

    def action(self) -> dict[str, Any]:
        return {k: v for k, v in self.cleaned_data.items() if k != "seed" and v is not None and v != ""}


def action_preview(action: dict[str, Any]) -> str:
    return json.dumps(action, indent=2)


class CatalogImportForm(forms.Form):
    """Environments from an OpenEnv catalog: a git repository (its `root` holds one folder per environment) whose
    cards are read with OpenEnv's own `openenv.discovery`; every card, or the ones named."""

    catalog = forms.CharField(max_length=500, label="Catalog",
                              help_text="A git repository URL (https://…, file://…) or a folder on the web host that "
                                        "is a git repository.")  # fmt: skip
    ref = forms.CharField(required=False, max_length=200, label="Git ref", help_text="Blank: the default branch.")
    root = forms.CharField(required=False, max_length=300, initial="envs", label="Folder of environments",
                           help_text="Its sub-folders with an openenv.yaml are the environments.")  # fmt: skip
    only = forms.CharField(required=False, max_length=2000, label="Only these",
                           help_text="Comma separated card or folder names. Blank: every card.")  # fmt: skip

    def clean_catalog(self) -> str:
        value = self.cleaned_data["catalog"].strip()
        if value.startswith("-"):
            raise ValidationError("A catalog is a repository URL or a folder.")
        return value

    def job_params(self) -> dict[str, Any]:
        data = self.cleaned_data
        only = [n.strip() for n in (data.get("only") or "").split(",") if n.strip()]
        return {"catalog": data["catalog"], "ref": (data.get("ref") or "").strip(),
                "root": (data.get("root") or "").strip() or "envs", "only": only}  # fmt: skip


class AssetUploadForm(forms.Form):
    """A data file a version's server reads (a word list, a dataset), uploaded once and stored by content."""

    MAX_BYTES = 256 * 1024**2  # larger data: `manage.py env asset add` from a path on the web host

    file = forms.FileField(label="Data file")
    variable = forms.CharField(
        max_length=100, required=False, label="The variable it reads",
        help_text="NLTK_DATA, HF_HOME, or the environment's own setting (FINQA_DATA_PATH).",
    )  # fmt: skip

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > self.MAX_BYTES:
            raise ValidationError(f"An upload is at most {self.MAX_BYTES // 2**20} MiB; give a larger one from a path "
                                  f"with `manage.py env asset add`.")  # fmt: skip
        return upload
