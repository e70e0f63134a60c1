from __future__ import annotations

from django import forms

from webapp.tokens.models import Scope
from webapp.tokens.services import MAX_EXPIRES_DAYS


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What uses it: a laptop, a CI job, a training script")
    team = forms.ChoiceField(help_text="It acts within this team only")
    scope = forms.ChoiceField(choices=Scope.choices, initial=Scope.READ)
    expires_days = forms.IntegerField(
        min_value=1, max_value=MAX_EXPIRES_DAYS, initial=90, required=False, label="Expires after (days)",
        help_text="Empty: never",
    )  # fmt: skip

    def __init__(self, *args, teams=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].choices = [(str(t.pk), t.name) for t in teams]
