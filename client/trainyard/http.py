"""JSON over HTTP with the standard library: the client must install into any training environment."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class ApiError(Exception):
    """The server answered with an error (4xx or 5xx), or could not be reached (status 0)."""

    def __init__(self, status: int, detail: str, body: dict | None = None) -> None:
        super().__init__(f"{status}: {detail}" if status else detail)
        self.status = status
        self.detail = detail
        self.body = body or {}

    @property
    def retryable(self) -> bool:
        """Worth trying again later: unreachable, overloaded, rate-limited or a server error."""
        return self.status == 0 or self.status == 429 or self.status >= 500


def call(method: str, url: str, token: str, body: Any = None, *, timeout: float = 10.0) -> dict:
    data = None if body is None else json.dumps(body, default=str).encode()
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 (the user's own server URL)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            payload = response.read()
    except urllib.error.HTTPError as exc:
        try:
            parsed = json.loads(exc.read() or b"{}")
        except ValueError:
            parsed = {}
        raise ApiError(exc.code, str(parsed.get("detail") or exc.reason), parsed) from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise ApiError(0, f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from None
    return json.loads(payload) if payload else {}
