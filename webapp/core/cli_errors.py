"""A ValidationError as one line for a management command's error: every field with its messages."""

from __future__ import annotations

from django.core.exceptions import ValidationError


def validation_text(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items())
    return "; ".join(exc.messages)
