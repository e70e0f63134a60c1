"""One OpenEnv session over the server's /ws socket, with timeouts we enforce ourselves.

OpenEnv 0.10 applies no step timeout over /ws, and its client silently reconnects to a fresh, never-reset session
after a client-side timeout. So a session here is thrown away after any timeout or socket error: every later
call raises SessionBroken instead of talking to a session the episode never saw.

A server that refuses /ws but serves RFC 003's HTTP template (OpenEnv's calendar: reset/step over HTTP, MCP on
POST /mcp; envs.http_session) gets the same session over HTTP, as a tenant of its own: callers never know which.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.sync.client import connect as sync_connect

from envs.http_session import HttpAnswerError, HttpRequests, answer_of, serves_http_only


class EnvError(Exception):
    """The server answered with an error frame (validation, execution, capacity, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SessionBroken(Exception):
    """The session timed out or its socket failed; it must not be used again."""


class SessionTimedOut(SessionBroken):
    """No answer within the time limit: the server may still be working on the call, holding the session's slot."""


@dataclass(frozen=True)
class StepResult:
    observation: dict[str, Any]
    reward: float | None
    done: bool
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


def ws_url(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base.removeprefix("https://") + "/ws"
    return "ws://" + base.removeprefix("http://") + "/ws"


def encode(kind: str, data: dict[str, Any] | None = None) -> str:
    # state and close frames carry no data; OpenEnv refuses them with one.
    return json.dumps({"type": kind} if data is None else {"type": kind, "data": data})


def decode(frame: str | bytes) -> dict[str, Any]:
    message = json.loads(frame)
    if message.get("type") == "error":
        data = message.get("data") or {}
        raise EnvError(str(data.get("code", "ERROR")), str(data.get("message", data)) + _field_errors(data))
    return message.get("data") or {}


def _field_errors(data: dict[str, Any]) -> str:
    """What OpenEnv's "Invalid message" carries in its `errors` (pydantic's), said: which field and why. OpenEnv's
    finqa on a dataset with a number for an answer refused every reset with "Invalid message" alone to the user, while
    its frame said which field: `ground_truth: Input should be a valid string (44)`."""
    errors = data.get("errors")
    if not isinstance(errors, list) or not errors:
        return ""
    said = []
    for error in errors[:3]:
        if not isinstance(error, dict):
            continue
        where = ".".join(str(part) for part in error.get("loc") or []) or "message"
        given = f" ({str(error['input'])[:60]})" if "input" in error and not isinstance(error["input"], dict) else ""
        said.append(f"{where}: {error.get('msg', 'invalid')}{given}")
    more = f"; and {len(errors) - 3} more" if len(errors) > 3 else ""
    return f" ({'; '.join(said)}{more})" if said else ""


def refused_socket(exc: Exception) -> bool:
    """A handshake the server refused because it serves no /ws (Starlette answers 403, others 404)."""
    return isinstance(exc, websockets.InvalidStatus) and exc.response.status_code in (403, 404)


def http_error(exc: HttpAnswerError) -> EnvError:
    return EnvError(exc.code, exc.message)


def step_result(data: dict[str, Any]) -> StepResult:
    reward = data.get("reward")
    return StepResult(
        observation=data.get("observation") or {},
        reward=float(reward) if reward is not None else None,
        done=bool(data.get("done", False)),
        raw=data,
    )


class AsyncEnvSession:
    """An asyncio session: `async with AsyncEnvSession(url) as s: await s.reset(seed=1); await s.step({...})`."""

    def __init__(self, endpoint: str, *, timeout: float = 30.0, connect_timeout: float = 10.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._ws: ClientConnection | None = None
        self._http: HttpRequests | None = None  # set instead of _ws for a server that serves no /ws
        self._client: httpx.AsyncClient | None = None
        self.broken: str | None = None

    @property
    def over_http(self) -> bool:
        """Whether the server serves no /ws and this session is a tenant over HTTP (envs.http_session)."""
        return self._http is not None

    async def __aenter__(self) -> AsyncEnvSession:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        try:
            self._ws = await asyncio.wait_for(
                connect(ws_url(self.endpoint), max_size=2**24, open_timeout=self.connect_timeout),
                self.connect_timeout,
            )
        except (OSError, TimeoutError, websockets.WebSocketException) as exc:
            if refused_socket(exc) and await asyncio.to_thread(serves_http_only, self.endpoint,
                                                               timeout=self.connect_timeout):  # fmt: skip
                self._http, self._client = HttpRequests(self.endpoint), httpx.AsyncClient()
                return
            raise SessionBroken(f"cannot open a session at {self.endpoint}: {exc}") from exc

    async def _call_http(self, kind: str, data: dict[str, Any] | None, limit: float) -> dict[str, Any]:
        assert self._http is not None and self._client is not None
        method, url, body, translated = self._http.request(kind, data)
        try:
            response = await self._client.request(method, url, json=body, headers=self._http.headers, timeout=limit)
        except httpx.TimeoutException:
            await self._discard(f"{kind} took longer than {limit:g} s; the session was discarded")
            raise SessionTimedOut(self.broken) from None
        except httpx.HTTPError as exc:
            await self._discard(f"the session's HTTP call failed during {kind}: {exc}")
            raise SessionBroken(self.broken) from exc
        try:
            return self._http.answer(answer_of(response), translated)
        except HttpAnswerError as exc:
            raise http_error(exc) from None

    async def _call(self, kind: str, data: dict[str, Any] | None, timeout: float | None) -> dict[str, Any]:
        if self.broken:
            raise SessionBroken(self.broken)
        if self._ws is None and self._http is None:
            await self.open()
        limit = self.timeout if timeout is None else timeout
        if self._http is not None:
            return await self._call_http(kind, data, limit)
        assert self._ws is not None
        try:
            await self._ws.send(encode(kind, data))
            frame = await asyncio.wait_for(self._ws.recv(), limit)
        except TimeoutError:
            await self._discard(f"{kind} took longer than {limit:g} s; the session was discarded")
            raise SessionTimedOut(self.broken) from None
        except (OSError, websockets.WebSocketException) as exc:
            # The server may have said why before closing (e.g. CAPACITY_REACHED on connect): surface that.
            last_word = None
            try:
                last_word = await asyncio.wait_for(self._ws.recv(), 0.5)
            except (OSError, TimeoutError, websockets.WebSocketException):
                pass
            await self._discard(f"the session's socket failed during {kind}: {exc}")
            if last_word is not None:
                decode(last_word)
            raise SessionBroken(self.broken) from exc
        return decode(frame)

    async def _discard(self, reason: str) -> None:
        self.broken = reason
        await self._close_http()
        if self._ws is not None:
            ws, self._ws = self._ws, None
            await ws.close()

    async def reset(self, *, timeout: float | None = None, **kwargs: Any) -> StepResult:
        return step_result(await self._call("reset", kwargs, timeout))

    async def step(self, action: dict[str, Any], *, timeout: float | None = None) -> StepResult:
        return step_result(await self._call("step", action, timeout))

    async def state(self, *, timeout: float | None = None) -> dict[str, Any]:
        return await self._call("state", None, timeout)

    async def _close_http(self) -> None:
        self._http = None
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def close(self) -> None:
        await self._close_http()
        if self._ws is not None:
            ws, self._ws = self._ws, None
            try:
                await ws.send(encode("close"))
            except websockets.WebSocketException:
                pass
            await ws.close()


class EnvSession:
    """The blocking twin of AsyncEnvSession, for the CLI, the probes and scripts."""

    def __init__(self, endpoint: str, *, timeout: float = 30.0, connect_timeout: float = 10.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._ws = None
        self._http: HttpRequests | None = None  # set instead of _ws for a server that serves no /ws
        self._client: httpx.Client | None = None
        self.broken: str | None = None

    @property
    def over_http(self) -> bool:
        """Whether the server serves no /ws and this session is a tenant over HTTP (envs.http_session)."""
        return self._http is not None

    def __enter__(self) -> EnvSession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        try:
            self._ws = sync_connect(ws_url(self.endpoint), max_size=2**24, open_timeout=self.connect_timeout)
        except (OSError, TimeoutError, websockets.WebSocketException) as exc:
            if refused_socket(exc) and serves_http_only(self.endpoint, timeout=self.connect_timeout):
                self._http, self._client = HttpRequests(self.endpoint), httpx.Client()
                return
            raise SessionBroken(f"cannot open a session at {self.endpoint}: {exc}") from exc

    def _call_http(self, kind: str, data: dict[str, Any] | None, limit: float) -> dict[str, Any]:
        assert self._http is not None and self._client is not None
        method, url, body, translated = self._http.request(kind, data)
        try:
            response = self._client.request(method, url, json=body, headers=self._http.headers, timeout=limit)
        except httpx.TimeoutException:
            self._discard(f"{kind} took longer than {limit:g} s; the session was discarded")
            raise SessionTimedOut(self.broken) from None
        except httpx.HTTPError as exc:
            self._discard(f"the session's HTTP call failed during {kind}: {exc}")
            raise SessionBroken(self.broken) from exc
        try:
            return self._http.answer(answer_of(response), translated)
        except HttpAnswerError as exc:
            raise http_error(exc) from None

    def _call(self, kind: str, data: dict[str, Any] | None, timeout: float | None) -> dict[str, Any]:
        if self.broken:
            raise SessionBroken(self.broken)
        if self._ws is None and self._http is None:
            self.open()
        limit = self.timeout if timeout is None else timeout
        if self._http is not None:
            return self._call_http(kind, data, limit)
        try:
            self._ws.send(encode(kind, data))
            frame = self._ws.recv(timeout=limit)
        except TimeoutError:
            self._discard(f"{kind} took longer than {limit:g} s; the session was discarded")
            raise SessionTimedOut(self.broken) from None
        except (OSError, websockets.WebSocketException) as exc:
            last_word = None
            try:
                last_word = self._ws.recv(timeout=0.5)
            except (OSError, TimeoutError, websockets.WebSocketException):
                pass
            self._discard(f"the session's socket failed during {kind}: {exc}")
            if last_word is not None:
                decode(last_word)  # raises EnvError with the server's reason
            raise SessionBroken(self.broken) from exc
        return decode(frame)

    def _discard(self, reason: str) -> None:
        self.broken = reason
        self._close_http()
        if self._ws is not None:
            ws, self._ws = self._ws, None
            ws.close()

    def reset(self, *, timeout: float | None = None, **kwargs: Any) -> StepResult:
        return step_result(self._call("reset", kwargs, timeout))

    def step(self, action: dict[str, Any], *, timeout: float | None = None) -> StepResult:
        return step_result(self._call("step", action, timeout))

    def state(self, *, timeout: float | None = None) -> dict[str, Any]:
        return self._call("state", None, timeout)

    def _close_http(self) -> None:
        self._http = None
        if self._client is not None:
            client, self._client = self._client, None
            client.close()

    def close(self) -> None:
        self._close_http()
        if self._ws is not None:
            ws, self._ws = self._ws, None
            try:
                ws.send(encode("close"))
            except websockets.WebSocketException:
                pass
            ws.close()
