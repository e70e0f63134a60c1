from __future__ import annotations

from django import forms

from webapp.accounts.models import Role


class MembershipAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class MembershipRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
