"""OpenEnv servers that serve no /ws: MCP environments built on RFC 003's HTTP template (OpenEnv's calendar).

Such a server registers its own `POST /reset`, `POST /step` and `GET /state` (a stateful environment behind them),
answers MCP's JSON-RPC on `POST /mcp` (`tools/list`), and publishes no `/schema`. Its tenants are told apart by a
header (`x-database-id`: each one gets its own database, seeded again on reset), so a session here is a tenant of
our own naming, and a session over HTTP is as isolated as one over /ws.

Its actions speak the template's dialect (`{"action_type": "ToolCallAction", "tool_name", "arguments"}`, answered
with `success`, `error_message`, `tool_result`); the channel translates OpenEnv's MCP actions (`call_tool`,
`list_tools`) into it and the answers back, keeping every field the server sent, so the rest of Trainyard reads
one shape. Everything else (a non-MCP action) passes through as it is.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

TENANT_HEADER = "x-database-id"  # the template's multi-tenancy header (Calendar, and the MCPs copied from it)


class HttpAnswerError(Exception):
    """The server answered a call with an HTTP error: (code, message) as an error frame would carry them."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def jsonrpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def listed_tools(answer: Any) -> list[dict[str, Any]] | None:
    """The tools of a JSON-RPC `tools/list` answer, or None when it is not one."""
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), dict):
        return None
    tools = answer["result"].get("tools")
    return tools if isinstance(tools, list) else None


def mcp_http_tools(endpoint: str, *, timeout: float = 10.0) -> list[dict[str, Any]] | None:
    """The tools a server lists on `POST /mcp`, or None when it serves no MCP endpoint there."""
    try:
        response = httpx.post(f"{endpoint.rstrip('/')}/mcp", json=jsonrpc("tools/list"), timeout=timeout,
                              headers={"accept": "application/json, text/event-stream"})  # fmt: skip
        if response.status_code != 200:
            return None
        return listed_tools(response.json())
    except (httpx.HTTPError, ValueError):
        return None


def serves_http_only(endpoint: str, *, timeout: float = 10.0) -> bool:
    """Whether `endpoint` is an RFC 003 HTTP server: no /schema, and MCP's `initialize` answered on POST /mcp.
    Asked at every session's open, so it asks the small questions (calendar's `tools/list` is ~100 KB)."""
    base = endpoint.rstrip("/")
    try:
        if httpx.get(f"{base}/schema", timeout=timeout).status_code != 404:
            return False
        hello = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "trainyard"}}
        response = httpx.post(f"{base}/mcp", json=jsonrpc("initialize", hello), timeout=timeout,
                              headers={"accept": "application/json, text/event-stream"})  # fmt: skip
        answer = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(answer, dict) and isinstance(answer.get("result"), dict)


def to_template_action(action: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the action in the template's dialect, whether it was an MCP action that was translated)."""
    kind = action.get("type")
    if kind == "call_tool":
        translated = {"action_type": "ToolCallAction", "tool_name": action.get("tool_name"),
                      "arguments": action.get("arguments") or {}}  # fmt: skip
        return translated, True
    if kind == "list_tools":
        return {"action_type": "ListToolsAction"}, True
    return action, False


def from_template_observation(observation: dict[str, Any]) -> dict[str, Any]:
    """The template's answer in the shape of OpenEnv's MCP observations (`tools`, `result`, `error`), every field
    the server sent kept beside them."""
    out = dict(observation)
    if isinstance(observation.get("tools_list"), list):
        out["tools"] = observation["tools_list"]
    if "tool_result" in observation:
        out["result"] = observation["tool_result"]
    if observation.get("success") is False:
        out["error"] = str(observation.get("error_message") or "the server says the action did not succeed")
    return out


def answer_of(response: httpx.Response) -> dict[str, Any]:
    """A response's JSON, or HttpAnswerError naming the status and the server's own words."""
    if response.status_code >= 400:
        try:
            body = response.json()
            detail = body.get("detail", body) if isinstance(body, dict) else body
        except ValueError:
            detail = response.text[:500]
        raise HttpAnswerError(f"HTTP_{response.status_code}", str(detail))
    try:
        body = response.json()
    except ValueError as exc:
        raise HttpAnswerError("BAD_ANSWER", f"the server's answer is not JSON: {response.text[:200]!r}") from exc
    if not isinstance(body, dict):
        raise HttpAnswerError("BAD_ANSWER", "the server's answer is not a JSON object")
    return body


class HttpRequests:
    """The requests one session makes, whichever client (blocking or asyncio) sends them."""

    def __init__(self, endpoint: str) -> None:
        self.base = endpoint.rstrip("/")
        self.headers = {TENANT_HEADER: f"trainyard-{uuid.uuid4().hex}"}

    def request(self, kind: str, data: dict[str, Any] | None) -> tuple[str, str, dict[str, Any] | None, bool]:
        """(method, url, json body, whether the answer is to be translated back) for one session call."""
        if kind == "reset":
            return "POST", f"{self.base}/reset", dict(data or {}), False
        if kind == "step":
            action, translated = to_template_action(dict(data or {}))
            return "POST", f"{self.base}/step", {"action": action}, translated
        if kind == "state":
            return "GET", f"{self.base}/state", None, False
        raise ValueError(f"no HTTP call for {kind!r}")

    @staticmethod
    def answer(body: dict[str, Any], translated: bool) -> dict[str, Any]:
        """The call's answer as a /ws frame's data: {observation, reward, done} for reset and step."""
        if translated and isinstance(body.get("observation"), dict):
            body = {**body, "observation": from_template_observation(body["observation"])}
        return body
