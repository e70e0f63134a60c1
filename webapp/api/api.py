"""The REST API, /api/v1/: the pages' actions and reads for scripts, notebooks and CI jobs (django-ninja).

Every endpoint takes a bearer token (webapp.tokens) and works within the token's team through the same services
and selectors as the pages; the OpenAPI document (/api/v1/openapi.json) and its browsable page (/api/v1/docs) are
generated from the schemas. Errors are JSON `{"detail", "errors": {field: [...]}}`: 401 without a valid token,
403 for a write with a read token, 404 for what the team cannot see, 422 naming the field, 429 over the rate."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, Throttled
from ninja.errors import ValidationError as SchemaValidationError

from webapp.api import alerts, catalog, evals, external, fleet, jobs, runs
from webapp.api.auth import TokenAuth, TokenRateThrottle, token_of
from webapp.api.responses import answers
from webapp.api.schemas import MeOut
from webapp.runs.services import IllegalTransition

api = NinjaAPI(
    title="Trainyard API", version="1", urls_namespace="api-v1", auth=TokenAuth(), throttle=[TokenRateThrottle()],
    docs_url="/docs", openapi_url="/openapi.json",
    description="Environments, runs, evaluations and workers of one team, with a token from Settings → API tokens.",
)  # fmt: skip


def error(request: HttpRequest, status: int, detail: str, errors: dict | None = None) -> HttpResponse:
    return api.create_response(request, {"detail": detail, "errors": errors or {}}, status=status)


@api.exception_handler(DjangoValidationError)
def refused(request: HttpRequest, exc: DjangoValidationError) -> HttpResponse:
    if hasattr(exc, "error_dict"):
        errors = {field: list(messages) for field, messages in exc.message_dict.items()}
        first = next(iter(errors.items()))
        return error(request, 422, f"{first[0]}: {' '.join(first[1])}", errors)
    return error(request, 409 if isinstance(exc, IllegalTransition) else 422, " ".join(exc.messages))


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, str(exc) or "Not found.")


@api.exception_handler(SchemaValidationError)
def malformed(request: HttpRequest, exc: SchemaValidationError) -> HttpResponse:
    errors: dict[str, list[str]] = {}
    for item in exc.errors:
        # ninja's location is (where, parameter, field...): the field is what the client named
        location = [str(part) for part in item.get("loc", ()) if part not in ("body", "query", "path", "paging",
                                                                              "filters")]  # fmt: skip
        errors.setdefault(".".join(location) or "request", []).append(item.get("msg", "is not valid"))
    field, messages = next(iter(errors.items()))
    return error(request, 422, f"{field}: {' '.join(messages)}", errors)


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return error(request, 403, str(exc) or "Not allowed.")


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error(request, 401, "A valid API token is needed: Authorization: Bearer <token>.")
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(Throttled)
def throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    response = error(request, 429, "Too many requests with this token: slow down.")
    if exc.wait:
        response["Retry-After"] = str(int(exc.wait) + 1)
    return response


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return error(request, exc.status_code, str(exc))


@api.get("/me", response=answers(MeOut), tags=["tokens"], summary="The token's user, team and scope")
def me(request: HttpRequest):
    token = token_of(request)
    return {"user": token.user.get_username(), "team": token.team.slug, "scope": token.scope,
            "expires_at": token.expires_at}  # fmt: skip


api.add_router("", catalog.router)
api.add_router("", external.router)  # before runs: /runs/external is not a run's id
api.add_router("", runs.router)
api.add_router("", alerts.router)
api.add_router("", evals.router)
api.add_router("", fleet.router)
api.add_router("", jobs.router)


def api_not_found(request: HttpRequest, rest: str) -> HttpResponse:
    """Any other path under /api/v1/: a JSON 404, as the API's own answers are."""
    from django.http import JsonResponse

    return JsonResponse({"detail": f"No API endpoint /api/v1/{rest[:200]}", "errors": {}}, status=404)
