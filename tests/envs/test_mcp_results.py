"""What an MCP tool's answer means to a run: a text, or a refusal. OpenEnv's MCP environments refuse in three ways,
and each is a refused call (counted so, and never taught by a warm start): a framework error, a tool that raised
(`isError`), and a refusal written as the answer ("Error: ...", as OpenEnv's finqa and coding_tools write it)."""

from __future__ import annotations

import pytest

from envs.mcp_tools import mcp_result


def answered(text: str, **result) -> dict:
    return {"result": {"content": [{"type": "text", "text": text}], **result}, "done": False, "reward": 0.0}


@pytest.mark.parametrize(
    "text",
    [
        "Error: Table 'revenue' not found for company 'acme'",  # finqa's get_table_info
        "Error: Query must include filters (WHERE, HAVING, etc.)",  # finqa's sql_query
        "Error executing query: no such column: usd",  # finqa's sql_query, sqlite's own words
        "  Error: environment not reset. Call reset() first.",  # coding_tools, jupyter, terminus
    ],
)
def test_a_refusal_written_as_the_answer_is_a_tool_error(text):
    shown, error = mcp_result(answered(text))
    assert shown == "" and error == f"tool error: {text}"


@pytest.mark.parametrize(
    "text", ["Errors: 0", "error: lower case is a word the tool chose", "150", "No Error: the table is clean", ""]
)
def test_an_answer_that_only_mentions_an_error_is_an_answer(text):
    assert mcp_result(answered(text)) == (text, None)


def test_a_tool_that_raised_and_a_framework_error_stay_tool_errors():
    assert mcp_result(answered("the dial only has 0 to 9", isError=True)) == (
        "",
        "tool error: the dial only has 0 to 9",
    )
    framework = {"error": {"error_type": "tool_not_found", "message": "no tool 'dial'"}, "result": None}
    assert mcp_result(framework) == ("", "tool_not_found: no tool 'dial'")
