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
from envs.providers.server_stack import import_server_stack


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


def standby(control_fd: int) -> None:
    """Import OpenEnv's server stack, then wait for the socket and app to serve (envs/providers/server_standby.py)."""
    import json
    import os

    die_with_parent()
    import_server_stack()
    print("standing by", flush=True)
    control = socket.socket(fileno=control_fd)
    message, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
    if not message or not fds:
        raise SystemExit(0)  # the provider closed its end: nothing to serve
    order = json.loads(message)
    log = os.open(order["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.environ.update(order["env"])
    os.chdir(order["cwd"])
    sys.path[:0] = order["first"]
    sys.path.extend(order["last"])
    serve(socket.socket(fileno=fds[0]), order["app"], "warning")


def serve(sock: socket.socket, target: str, log_level: str) -> None:
    import_server_stack()
    app = load_app(target)
    config = uvicorn.Config(app, log_level=log_level, ws_max_size=2**24, timeout_graceful_shutdown=3)
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--standby":
        return standby(int(sys.argv[2]))
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    die_with_parent()  # a server started for a worker never outlives it
    serve(socket.socket(fileno=args.fd), args.app, args.log_level)


if __name__ == "__main__":
    main()
