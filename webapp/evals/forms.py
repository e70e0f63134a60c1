from __future__ import annotations

from django import forms

from webapp.evals.episode_budget import DEFAULT_MAX_TOKENS
from webapp.evals.services import BOUNDS


class EvaluationCreateForm(forms.Form):
    model_name = forms.CharField(label="Model", initial="tiny-local", max_length=300,
                                 help_text="tiny-local, a warm start, a Hub id, a local path, or run:ID/final",
                                 widget=forms.TextInput(attrs={"list": "model-choices"}))  # fmt: skip
    versions = forms.MultipleChoiceField(label="Environment versions", widget=forms.SelectMultiple(attrs={"size": 5}))
    episodes = forms.IntegerField(initial=32, min_value=1, max_value=int(BOUNDS["episodes"][1]),
                                  help_text="Seeds from the seed start (ignored when seeds are given)")  # fmt: skip
    seed_start = forms.IntegerField(initial=1_000_000, min_value=0, max_value=int(BOUNDS["seed_start"][1]))
    seeds = forms.CharField(required=False, max_length=2000, help_text="Or explicit seeds, e.g. 1000-1063, 2000")
    prompts = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), max_length=2_000_000,
                              help_text="Or one prompt a line (one episode each)")  # fmt: skip
    k = forms.IntegerField(initial=1, min_value=1, max_value=int(BOUNDS["k"][1]),
                           help_text="Samples per episode: avg@k and pass@k")  # fmt: skip
    greedy = forms.BooleanField(initial=True, required=False, help_text="Greedy decoding (else temperature/top-p)")
    temperature = forms.FloatField(initial=1.0, min_value=0.0, max_value=BOUNDS["temperature"][1])
    top_p = forms.FloatField(initial=1.0, min_value=0.0, max_value=1.0)
    max_turns = forms.IntegerField(initial=6, min_value=1, max_value=int(BOUNDS["max_turns"][1]))
    max_tokens = forms.IntegerField(initial=DEFAULT_MAX_TOKENS, min_value=1, max_value=int(BOUNDS["max_tokens"][1]))
    name = forms.CharField(required=False, max_length=100)

    def __init__(self, *args, versions=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.version_map = {str(v.pk): v for v in versions}
        self.fields["versions"].choices = [(str(v.pk), f"{v.environment.name} {v.label}") for v in versions]
