from __future__ import annotations

import json
from typing import Any

from django import forms

from envs.builtin import builtin_environments
from webapp.catalog.models import SourceKind, Visibility


def _tags(raw: str) -> list[str]:
    return sorted({t.strip().lower() for t in raw.split(",") if t.strip()})


class VersionSourceForm(forms.Form):
    source_kind = forms.ChoiceField(choices=SourceKind.choices, initial=SourceKind.BUILTIN)
    source_ref = forms.CharField(
        max_length=500,
        label="Source",
        help_text="Built-in name (e.g. guess-number), a folder path on the worker, an image reference, or a URL.",
    )
    label = forms.CharField(max_length=50, initial="1.0.0", label="Version")
    capacity = forms.IntegerField(min_value=1, max_value=4096, initial=64, help_text="Sessions one replica accepts")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind, ref = data.get("source_kind"), (data.get("source_ref") or "").strip()
        if kind == SourceKind.URL and not ref.startswith(("http://", "https://")):
            self.add_error("source_ref", "A URL source must start with http:// or https://.")
        if kind == SourceKind.BUILTIN and ref not in {b.slug for b in builtin_environments()}:
            names = ", ".join(b.slug for b in builtin_environments())
            self.add_error("source_ref", f"Built-in environments are: {names}.")
        data["source_ref"] = ref
        return data


class EnvironmentCreateForm(VersionSourceForm):
    name = forms.CharField(max_length=100)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    tags = forms.CharField(required=False, help_text="Comma separated")
    visibility = forms.ChoiceField(choices=Visibility.choices, initial=Visibility.TEAM)

    field_order = ["name", "description", "tags", "visibility", "source_kind", "source_ref", "label", "capacity"]

    def clean_tags(self) -> list[str]:
        return _tags(self.cleaned_data.get("tags", ""))


def _field_for(name: str, prop: dict[str, Any], required: bool) -> forms.Field:
    common = {"required": required, "help_text": prop.get("description", ""), "label": name}
    if "default" in prop:
        common["initial"] = prop["default"]
    if "enum" in prop:
        return forms.ChoiceField(choices=[(v, v) for v in prop["enum"]], **common)
    kind = prop.get("type")
    if kind == "integer":
        return forms.IntegerField(min_value=prop.get("minimum"), max_value=prop.get("maximum"), **common)
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
        self.fields["seed"] = forms.IntegerField(required=False, initial=0, help_text="Seed for reset()")

    def action(self) -> dict[str, Any]:
        return {k: v for k, v in self.cleaned_data.items() if k != "seed" and v is not None and v != ""}


def action_preview(action: dict[str, Any]) -> str:
    return json.dumps(action, indent=2)
