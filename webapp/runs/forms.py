from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from webapp.runs.grpo import BOUNDS, CHOICES, GROUPS, HELP, GRPOSettings

MODEL_HELP = (
    "tiny-local (CPU) is built on this machine, tiny-local@ENV:VERSION is it warm-started on a version's tools "
    "(manage.py model warmstart); or a Hugging Face Hub id, or a local path on the worker."
)


class RunCreateForm(forms.Form):
    env_version = forms.ChoiceField(label="Environment version")
    model_name = forms.CharField(label="Model", initial="tiny-local", max_length=300, help_text=MODEL_HELP,
                                 widget=forms.TextInput(attrs={"list": "model-choices"}))  # fmt: skip
    prompts = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One prompt a line. Empty: the environment's default prompt over varied seeds.",
    )
    prompts_file = forms.FileField(
        required=False, label="Prompts (JSONL)", help_text="Rows with a 'prompt' field; other columns reach reset()."
    )
    replicas = forms.IntegerField(
        min_value=1, max_value=64, required=False,
        help_text="Environment servers to start. Blank: as many as one step's sessions need (measured capacity).",
    )  # fmt: skip
    env_weight = forms.FloatField(label="Its mixture weight", initial=1.0, required=False, min_value=0.001,
                                  max_value=1000, help_text="Only with other environments below.")  # fmt: skip
    mixture = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}), label="Also train on",
        help_text="Other environments in the same run, one a line: SLUG[@VERSION] WEIGHT (e.g. word-guess 0.5). "
        "Rows are routed by weight; rewards are charted per environment.",
    )  # fmt: skip
    provider = forms.ChoiceField(choices=[("process", "process"), ("docker", "docker")], initial="process")
    tags = forms.CharField(required=False, max_length=500, help_text="Comma separated")
    transcript_policy = forms.ChoiceField(
        choices=[("all", "every episode in full"), ("sample", "summaries; full transcripts of a sample, the best, "
                                                              "the worst and the errored")],
        initial="all", required=False, label="Episode transcripts", help_text="Bounded storage for long runs.",
    )  # fmt: skip
    trust_override_reason = forms.CharField(
        required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2}), label="Trust override reason",
        help_text="Required to start a run on a version that failed a trust check.",
    )  # fmt: skip

    def __init__(self, *args, versions=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.versions = {str(v.pk): v for v in versions}
        self.fields["env_version"].choices = [(str(v.pk), self.version_label(v)) for v in versions]
        defaults = GRPOSettings()
        for name, value in defaults.as_dict().items():
            self.fields[name] = setting_field(name, value)
        self.grpo_fields = list(defaults.as_dict())

    def grpo_groups(self) -> list[tuple[str, list, bool]]:
        """The settings' fields in the form's groups (sampling, loss, optimisation, ...): the first three open, and
        any group with an error."""
        groups = []
        for i, (title, names) in enumerate(GROUPS.items()):
            bound = [self[name] for name in names]
            groups.append((title, bound, i < 3 or any(field.errors for field in bound)))
        return groups

    @staticmethod
    def version_label(version) -> str:
        report = version.trust_reports.first()
        verdict = report.verdict if report else "unchecked"
        seeds = " — ignores seeds: GRPO groups start from different states" if version.seeding == "ignored" else ""
        return f"{version.environment.name} {version.label} — trust: {verdict}{seeds}"

    def grpo_config(self) -> dict:
        """The settings as GRPOSettings.from_dict takes them; a setting left empty (or not sent by an older client)
        keeps its default."""
        return {
            name: self.cleaned_data[name]
            for name in self.grpo_fields
            if self.cleaned_data.get(name) is not None and self.cleaned_data[name] != ""
        }

    def clean_prompts_file(self):
        upload = self.cleaned_data.get("prompts_file")
        if upload and upload.size > settings.TRAINYARD_MAX_PROMPTS_MB * 1_000_000:
            raise forms.ValidationError(
                f"the file is {upload.size / 1e6:.1f} MB; a run takes at most {settings.TRAINYARD_MAX_PROMPTS_MB} MB."
            )
        return upload

    def clean_advanced(self) -> dict:
        from webapp.runs.grpo_fields import advanced_parse

        try:
            return advanced_parse(self.cleaned_data.get("advanced") or "")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_mixture(self) -> list:
        from webapp.runs.mixture import mixture_parse

        try:
            return mixture_parse(self.cleaned_data.get("mixture") or "", list(self.versions.values()))
        except ValidationError as exc:
            raise forms.ValidationError(exc.message_dict["mixture"]) from None

    def clean_tags(self) -> list[str]:
        return sorted({t.strip() for t in self.cleaned_data.get("tags", "").split(",") if t.strip()})


def setting_field(name: str, default) -> forms.Field:
    """The form field of one GRPO setting, from its default's kind, bounds and choices."""
    help_text = HELP.get(name, "")
    if isinstance(default, dict):
        return forms.CharField(required=False, label="advanced (JSON or YAML)", help_text=help_text, initial="",
                               widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}))  # fmt: skip
    if isinstance(default, bool):
        return forms.BooleanField(required=False, initial=default, label=name, help_text=help_text)
    if name in CHOICES:
        labels = [(c, c or "(this deployment's own workers)") for c in CHOICES[name]]
        return forms.ChoiceField(choices=labels, initial=default, label=name, help_text=help_text,
                                 required=False)  # fmt: skip
    if isinstance(default, str):
        return forms.CharField(required=False, initial=default, label=name, help_text=help_text, max_length=500)
    lo, hi = BOUNDS[name]
    field_class = forms.IntegerField if isinstance(default, int) else forms.FloatField
    return field_class(initial=default, help_text=help_text, label=name, min_value=lo, max_value=hi, required=False)
