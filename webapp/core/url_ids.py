"""Ids in URLs: at most 18 digits, so every id that matches fits a bigint column. A larger one is a 404 like any
other id that does not exist, never a database overflow (a 500)."""

from __future__ import annotations


class IdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)
