from __future__ import annotations

from django import forms

from webapp.alerts.models import AlertChannel, AlertRule


class ChannelForm(forms.Form):
    kind = forms.ChoiceField(choices=AlertChannel.Kind.choices)
    target = forms.CharField(max_length=500, help_text="https://hooks.slack.com/… or someone@example.com")


class RuleForm(forms.Form):
    """A team's own rule; `runs` are the team's recent runs a rule may be limited to."""

    def __init__(self, *args, runs=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.runs = {run.pk: run for run in runs}
        self.fields["run"].choices = [("", "every run of the team")] + [(r.pk, r.name) for r in runs]

    name = forms.CharField(max_length=100)
    metric = forms.CharField(max_length=100, help_text="A metric's name as charted: reward, kl, eval/mean_reward…")
    kind = forms.ChoiceField(choices=AlertRule.Kind.choices)
    above = forms.TypedChoiceField(choices=[("1", "above"), ("0", "below")], coerce=lambda v: v == "1", initial="1",
                                   help_text="For a threshold")  # fmt: skip
    value = forms.FloatField(min_value=-1e12, max_value=1e12,
                             help_text="The threshold; the percentage for a change; z for a z-score")  # fmt: skip
    run = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, choices=[("", "every run of the team")],
                                 help_text="Only this run")  # fmt: skip
    steps = forms.IntegerField(
        min_value=1, max_value=1000, initial=1, help_text="For N steps (threshold), over N (change), the window (z)"
    )
