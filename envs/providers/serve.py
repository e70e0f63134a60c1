"""Serve an ASGI app on a listening socket inherited from the parent (fd), so no port is ever raced for.

`python -m envs.providers.serve --fd 5 --app guess_number.server.app:app`
"""

from __future__ import annotations

import argparse
import importlib
import socket
import sys
import traceback

import uvicorn

from envs.parent_death import die_with_parent


def load_app(target: str):
    """Import `module:attribute` ourselves: uvicorn's importer re-raises `from None`, which drops the chain that
    holds the real cause when a server's import fallbacks fail ("No module named 'models'" hides the missing
    package that came first). Printed whole, the log keeps every link of the chain."""
    module_name, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute or "app")
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        raise SystemExit(1) from None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    die_with_parent()  # a server started for a worker never outlives it
    sock = socket.socket(fileno=args.fd)
    app = load_app(args.app)
    config = uvicorn.Config(app, log_level=args.log_level, ws_max_size=2**24, timeout_graceful_shutdown=3)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
