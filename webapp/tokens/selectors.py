from __future__ import annotations

from django.db.models import QuerySet

from webapp.tokens.models import ApiToken


def token_list(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).select_related("team")
