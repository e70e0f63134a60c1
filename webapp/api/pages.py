"""Pagination of every list: `limit` (1 to 500, default 50) and `offset`; the answer says how many there are in all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from ninja import Field

from webapp.api.schemas import InputSchema

MAX_LIMIT = 500


class PageQuery(InputSchema):
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    offset: int = Field(0, ge=0, le=10_000_000)


def page(rows: QuerySet, query: PageQuery, present: Callable[[Any], dict]) -> dict[str, Any]:
    return {
        "count": rows.count(), "limit": query.limit, "offset": query.offset,
        "items": [present(row) for row in rows[query.offset : query.offset + query.limit]],
    }  # fmt: skip
