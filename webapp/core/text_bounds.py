"""Text fields within their columns' lengths, checked before anything is written: a field error that names the field,
never a database error later (PostgreSQL refuses what is too long)."""

from __future__ import annotations

from django.core.exceptions import ValidationError


def text_bounds_check(**fields: tuple[str, int]) -> None:
    """Each text field (value, most characters) within its bound, or a field error naming it."""
    errors = {name: f"{name} is {len(value):,} characters long; at most {most:,}." for name, (value, most)
              in fields.items() if len(value) > most}  # fmt: skip
    if errors:
        raise ValidationError(errors)
