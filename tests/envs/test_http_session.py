"""A server that serves no /ws (RFC 003's HTTP template, as OpenEnv's calendar is written): its sessions are tenants
over HTTP, its tools come from MCP's POST /mcp, and everything above the session (the rollout class, the contract,
the trust probes) works as it does over /ws. The fixture is our own (tests/fixtures/envs/mcp_http_vault)."""

from __future__ import annotations

import asyncio
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from envs.adapter import ToolFailed, tool_env_class
from envs.contract import contract_hash, contract_read
from envs.mcp_tools import list_mcp_http_tools, mcp_result
from envs.providers import EnvSource
from envs.session import AsyncEnvSession, EnvSession, SessionBroken
from envs.trust.probes import FAILED, PASSED, ProbeContext, run_probes
from tests.envs.conftest import FIXTURE_ENVS

TRY = {"type": "call_tool", "tool_name": "try_code"}


@pytest.fixture(scope="module")
def vault(module_servers) -> str:
    """The vault over HTTP; its `read_dial` reaches the server's own API at the port it was given with `{port}`."""
    source = EnvSource("folder", str(FIXTURE_ENVS / "mcp_http_vault"), capacity=8,
                       env={"VAULT_SELF_URL": "http://127.0.0.1:{port}"})  # fmt: skip
    return module_servers(("fixture", "mcp_http_vault"), source)


def opened_by_bisection(session: EnvSession) -> tuple[int, float, bool]:
    """Play the vault to the end: (tries, the last reward, done)."""
    low, high, tries = 0, 9, 0
    while True:
        code = (low + high) // 2
        result = session.step({**TRY, "arguments": {"code": code}})
        tries += 1
        text, error = mcp_result(result.observation)
        assert error is None
        if text == "open" or result.done:
            return tries, result.reward, result.done
        low, high = (code + 1, high) if text == "higher" else (low, code - 1)


def test_the_server_serves_no_socket_and_a_session_goes_over_http(vault):
    assert httpx.get(f"{vault}/schema").status_code == 404
    with EnvSession(vault) as session:
        assert session.over_http
        first = session.reset(seed=3)
        assert first.done is False and first.observation["metadata"]["status"] == "locked"
        tries, reward, done = opened_by_bisection(session)
    assert done and reward == 1.0 and tries <= 4


def test_its_tools_are_what_it_lists_on_its_mcp_endpoint(vault):
    tools = {t.name: t for t in list_mcp_http_tools(vault)}
    assert set(tools) == {"try_code", "read_dial"}
    assert all(t.mcp for t in tools.values())
    assert tools["try_code"].parameters["required"] == ["code"]


def test_each_session_is_a_tenant_of_its_own(vault):
    """Alice's and Bob's sessions interleave on one server: each keeps its own vault (its own seed's code)."""
    with EnvSession(vault) as alice, EnvSession(vault) as bob:
        alice.reset(seed=3)
        bob.reset(seed=5)
        answers = {}
        for code in range(10):
            for name, session in (("alice", alice), ("bob", bob)):
                if name not in answers:
                    text, _ = mcp_result(session.step({**TRY, "arguments": {"code": code}}).observation)
                    if text == "open":
                        answers[name] = code
                if len(answers) == 2:
                    break
        assert alice.state()["database_id"] != bob.state()["database_id"]
    # each one's vault opened on its own seed's code, whatever the other did meanwhile
    assert answers == {"alice": random.Random(3).randint(0, 9), "bob": random.Random(5).randint(0, 9)}


def test_a_tool_error_is_a_tool_error_and_the_port_reaches_the_server(vault):
    with EnvSession(vault) as session:
        session.reset(seed=1)
        refused = session.step({**TRY, "arguments": {"code": 42}})
        assert refused.reward == -0.1
        assert mcp_result(refused.observation) == ("", "the dial only has 0 to 9")
        dial = session.step({"type": "call_tool", "tool_name": "read_dial", "arguments": {}})
        assert mcp_result(dial.observation) == ("the dial goes from 0 to 9", None)


def test_the_rollout_class_plays_over_http_and_is_paid_by_the_server(vault):
    cls = tool_env_class(name="vault", tools=list_mcp_http_tools(vault), endpoints=[vault])
    env = cls()
    env.reset(seed=3)
    low, high = 0, 9
    while not env.episode.done:
        code = (low + high) // 2
        answer = env.try_code(code=code)
        low, high = (code + 1, high) if answer == "higher" else (low, code - 1)
    assert env._episode_reward() == 1.0
    with pytest.raises(ToolFailed, match="over"):
        env.try_code(code=1)
    env.reset(seed=4)
    with pytest.raises(ToolFailed, match="0 to 9"):
        env.try_code(code=-3)
    env._close()


def test_an_asyncio_session_over_http(vault):
    async def play() -> tuple[bool, str]:
        async with AsyncEnvSession(vault, timeout=10) as session:
            await session.reset(seed=2)
            result = await session.step({**TRY, "arguments": {"code": 0}})
            return session.over_http, mcp_result(result.observation)[0]

    over_http, text = asyncio.run(play())
    assert over_http and text in {"higher", "open"}


def test_its_contract_names_the_transport_and_a_socket_server_keeps_its_hash(vault, served_fixture):
    contract = contract_read(vault)
    assert contract["transport"] == "http" and set(contract["tools"]) == {"try_code", "read_dial"}
    over_ws = contract_read(served_fixture("mcp_vault"))
    assert "transport" not in over_ws  # older pins keep their hash
    assert contract_hash(over_ws) != contract_hash(contract)


def test_a_server_with_neither_socket_nor_mcp_endpoint_is_refused_naming_the_socket():
    class NotFound(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_error(404)

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(SessionBroken, match=r"cannot open a session .*HTTP 404"):
            EnvSession(f"http://127.0.0.1:{server.server_port}", connect_timeout=2).open()
    finally:
        server.shutdown()


def test_the_trust_probes_pass_it_without_false_alarms(vault):
    """Its echo of the tenant (`database_id`) is a session's name, not state; a server that keeps no slot per
    session refuses none, which over HTTP is no fault."""
    results = {r.name: r for r in run_probes(ProbeContext(endpoint=vault, tools=list_mcp_http_tools(vault),
                                                          capacity=8, step_timeout=10))}  # fmt: skip
    assert not [r for r in results.values() if r.status == FAILED], {n: r.summary for n, r in results.items()}
    isolation = results["session_isolation"]
    assert isolation.status == PASSED and "database_id left out" in isolation.summary
    assert results["capacity"].status == PASSED and "over HTTP" in results["capacity"].summary
