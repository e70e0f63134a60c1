"""The error answers every endpoint may give, so that the OpenAPI document lists them (schemathesis holds the
served answers to it)."""

from __future__ import annotations

from typing import Any

from webapp.api.schemas import ErrorOut

READ_ERRORS = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut, 429: ErrorOut}
WRITE_ERRORS = {**READ_ERRORS, 403: ErrorOut, 409: ErrorOut}


def answers(ok: Any, *, write: bool = False, status: int = 200) -> dict[int, Any]:
    return {status: ok, **(WRITE_ERRORS if write else READ_ERRORS)}
