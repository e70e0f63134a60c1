"""Who calls the API: a bearer token (webapp.tokens) that acts for its user within its team only.

`request.auth` is the token. Every read is scoped to the token's team (`team_of`), and every write needs a token
of the write scope whose user may still write in that team (`write_required`)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer
from ninja.throttling import AuthRateThrottle

from webapp.tokens.models import ApiToken
from webapp.tokens.services import token_authenticate, token_may


class TokenAuth(HttpBearer):
    openapi_scheme = "bearer"

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        found = token_authenticate(token)
        if found is not None:
            request.user = found.user  # selectors and services check the user's memberships as for a page
        return found


class TokenRateThrottle(AuthRateThrottle):
    """Requests per token (`TRAINYARD_API_RATE`, e.g. 600/m); a 429 says when to come back."""

    def get_rate(self) -> str:
        return settings.TRAINYARD_API_RATE

    def get_cache_key(self, request: HttpRequest) -> str | None:
        token = getattr(request, "auth", None)
        return f"throttle_api_token_{token.pk}" if isinstance(token, ApiToken) else None


def token_of(request: HttpRequest) -> ApiToken:
    return request.auth  # type: ignore[attr-defined]


def write_required(request: HttpRequest) -> ApiToken:
    token = token_of(request)
    if not token_may(token, write=True):
        raise HttpError(403, "This token may only read: create a token with the write scope.")
    return token
