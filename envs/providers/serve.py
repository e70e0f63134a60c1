"""Serve an ASGI app on a listening socket inherited from the parent (fd), so no port is ever raced for.

`python -m envs.providers.serve --fd 5 --app guess_number.server.app:app`
"""

from __future__ import annotations

import argparse
import socket

import uvicorn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    sock = socket.socket(fileno=args.fd)
    config = uvicorn.Config(args.app, log_level=args.log_level, ws_max_size=2**24, timeout_graceful_shutdown=3)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
