from __future__ import annotations

import pytest

from webapp.tokens.services import token_create


@pytest.fixture
def token_for():
    """A token's text for a user in a team: token_for(alice, acme, "write")."""

    def make(user, team, scope: str = "read", **kwargs) -> str:
        return token_create(user=user, team=team, name=f"{user.username} test", scope=scope, **kwargs)[1]

    return make


@pytest.fixture
def api(client):
    """The Django test client speaking to /api/v1/ with a bearer token: api.get("/runs", token)."""

    class Api:
        def _headers(self, token: str | None) -> dict:
            return {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}

        def get(self, path: str, token: str | None, **params):
            return client.get(f"/api/v1{path}", params, **self._headers(token))

        def post(self, path: str, token: str | None, body: dict | None = None):
            return client.post(f"/api/v1{path}", body or {}, content_type="application/json", **self._headers(token))

        def client_put(self, path: str, token: str | None, body: dict):
            return client.put(f"/api/v1{path}", body, content_type="application/json", **self._headers(token))

    return Api()
