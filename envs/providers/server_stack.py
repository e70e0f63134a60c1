"""OpenEnv's server stack as an environment server imports it: without the Gradio web interface until something uses it.

`openenv.core.env_server` imports its web interface, and with it Gradio, at import, though only a server started with
`ENABLE_WEB_INTERFACE` serves it (and OpenEnv's own package tolerates Gradio's absence: that import sits in a
`try/except ModuleNotFoundError`, and the container images we build leave Gradio out). Gradio took about 7 s of CPU of
the ~11 s that importing the stack costs here, paid by every server process and every standby: in a test run that
starts hundreds of servers, most of the CPU the servers spent.

So Gradio is held back while the stack is imported, and released before the environment's own app is: an app that
imports Gradio (a custom web UI), and `create_app` when `ENABLE_WEB_INTERFACE` is set (it imports the web interface
when it builds the app), get it as usual; the two names the stack's package would have bound load on first use.
"""

from __future__ import annotations

import sys
from typing import Any

STACK = "openenv.core.env_server"
WEB_NAMES = ("create_web_interface_app", "WebInterfaceManager")


def import_server_stack() -> None:
    """Import OpenEnv's server stack (FastAPI, uvicorn, MCP) without loading Gradio; a no-op once imported."""
    if STACK in sys.modules:
        return
    held = "gradio" not in sys.modules
    if held:
        sys.modules["gradio"] = None  # type: ignore[assignment]  # Python's own way to say "not importable here"
    try:
        import openenv.core.env_server as stack
        import openenv.core.env_server.http_server  # noqa: F401
    finally:
        if held and sys.modules.get("gradio", False) is None:
            del sys.modules["gradio"]
    if all(getattr(stack, name, None) is None for name in WEB_NAMES):
        for name in WEB_NAMES:
            stack.__dict__.pop(name, None)
        stack.__getattr__ = _web_interface_name  # PEP 562: asked only for names the module lacks


def _web_interface_name(name: str) -> Any:
    if name in WEB_NAMES:
        from openenv.core.env_server import web_interface

        return getattr(web_interface, name)
    raise AttributeError(f"module {STACK!r} has no attribute {name!r}")
