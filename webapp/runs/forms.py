from __future__ import annotations

from django import forms
from django.conf import settings

from webapp.runs.grpo import BOUNDS, HELP, GRPOSettings

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
            field_class = forms.IntegerField if isinstance(value, int) else forms.FloatField
            lo, hi = BOUNDS[name]
            self.fields[name] = field_class(initial=value, help_text=HELP.get(name, ""), label=name, min_value=lo,
                                            max_value=hi)  # fmt: skip
        self.grpo_fields = list(defaults.as_dict())

    @staticmethod
    def version_label(version) -> str:
        report = version.trust_reports.first()
        verdict = report.verdict if report else "unchecked"
        seeds = " — ignores seeds: GRPO groups start from different states" if version.seeding == "ignored" else ""
        return f"{version.environment.name} {version.label} — trust: {verdict}{seeds}"

    def grpo_config(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.grpo_fields}

    def clean_prompts_file(self):
        upload = self.cleaned_data.get("prompts_file")
        if upload and upload.size > settings.TRAINYARD_MAX_PROMPTS_MB * 1_000_000:
            raise forms.ValidationError(
                f"the file is {upload.size / 1e6:.1f} MB; a run takes at most {settings.TRAINYARD_MAX_PROMPTS_MB} MB."
            )
        return upload

    def clean_tags(self) -> list[str]:
        return sorted({t.strip() for t in self.cleaned_data.get("tags", "").split(",") if t.strip()})
