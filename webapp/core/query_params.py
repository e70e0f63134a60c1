"""Query parameters read with bounds. A bad value is a 400 that names the parameter, never a 500.

Views read `?lo=`, `?limit=`, `?runs=` through these functions; the middleware below turns the one exception they
raise into a JSON 400 for JSON endpoints and a plain page for the rest, so no view repeats the try/except.
"""

from __future__ import annotations

import math

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

# The largest id or step a database column holds (BigAutoField / bigint); anything larger cannot exist.
LARGEST_ID = 2**63 - 1
LARGEST_STEP = 2**31 - 1


class BadQuery(ValueError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


def text_param(query, name: str, *, most: int = 200) -> str:
    """A filter's text: bounded, and never a NUL (PostgreSQL refuses one in a query, which would be a 500)."""
    raw = (query.get(name) or "").strip()
    if len(raw) > most:
        raise BadQuery(name, f"{name} is {len(raw):,} characters long; at most {most:,}")
    if "\x00" in raw:
        raise BadQuery(name, f"{name} must not contain a NUL character")
    return raw


def float_param(query, name: str, *, default: float | None = None) -> float | None:
    raw = (query.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise BadQuery(name, f"{name} must be a number, not {raw[:40]!r}") from None
    if not math.isfinite(value):
        raise BadQuery(name, f"{name} must be a finite number")
    return value


def int_param(query, name: str, *, lo: int, hi: int, default: int | None = None) -> int | None:
    """A whole number within [lo, hi]; "1e3" counts, "1.5" and "1e400" do not."""
    try:
        value = float_param(query, name)
    except BadQuery:
        value = math.nan
    if value is None:
        return default
    if math.isnan(value) or value != int(value):
        raise BadQuery(name, f"{name} must be a whole number, not {(query.get(name) or '').strip()[:40]!r}")
    if not lo <= value <= hi:
        raise BadQuery(name, f"{name} must be between {lo:,} and {hi:,}")
    return int(value)


def id_list_param(values: list[str], name: str, *, most: int) -> list[int]:
    """`?runs=12,15` or `?runs=12&runs=15`: distinct ids in the order given."""
    ids: list[int] = []
    for part in ",".join(values).replace(" ", "").split(","):
        if not part:
            continue
        # isdigit() alone takes "²" and "١٢", which int() refuses or reads: ids are ASCII digits.
        if not (part.isascii() and part.isdigit()) or not 0 < int(part) <= LARGEST_ID:
            raise BadQuery(name, f"{part[:40]!r} is not an id")
        if int(part) not in ids:
            ids.append(int(part))
    if len(ids) > most:
        raise BadQuery(name, f"at most {most} ids, not {len(ids)}")
    return ids


class BadQueryMiddleware:
    """Answers a BadQuery raised in a view with a 400 naming the parameter."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, BadQuery):
            return None
        if request.path.endswith(".json") or "json" in request.headers.get("Accept", ""):
            return JsonResponse({"error": {exception.name: [exception.message]}}, status=400)
        return render(request, "400.html", {"reason": exception.message}, status=400)
