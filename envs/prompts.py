"""The default task prompt for an environment, used when a run brings no prompts of its own."""

from __future__ import annotations


def default_prompt(*, description: str, tool_names: list[str]) -> str:
    tools = ", ".join(tool_names)
    return f"{description.strip()} Act only by calling the tools ({tools}); each result tells you what happened."
