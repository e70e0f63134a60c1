"""One environment server process kept ready for the process provider: it has imported OpenEnv's server stack
(FastAPI, uvicorn, MCP: ~3 s here; Gradio is left for a server that uses it, envs/providers/server_stack.py) and waits
for an app to serve.

The provider hands it the listening socket it bound (over a Unix socket pair, SCM_RIGHTS) with the app, the extra
environment variables and import paths a cold start would have had, and the log to write. It then imports that
environment's app (tenths of a second) and serves, exactly as `envs.providers.serve` does from nothing. Only for
servers that run on this interpreter (an environment with its own virtual environment starts cold), and only for a
first start (a replica restarted on its old port starts cold too).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from envs.parent_death import child_environment

REPO_ROOT = Path(__file__).resolve().parents[2]

_spare: tuple[subprocess.Popen, socket.socket] | None = None


def spare_spawn(log_dir: Path) -> None:
    """Start one spare server (no-op when one waits). Call from the thread that will outlive it: the spare dies with
    that thread's process (PR_SET_PDEATHSIG)."""
    global _spare
    if _spare is not None and _spare[0].poll() is None:
        return
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    log_dir.mkdir(parents=True, exist_ok=True)
    with (log_dir / f"server-standby-{os.getpid()}.log").open("ab") as log:
        popen = subprocess.Popen(
            [sys.executable, "-m", "envs.providers.serve", "--standby", str(theirs.fileno())], cwd=REPO_ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **child_environment()}, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, pass_fds=[theirs.fileno()], start_new_session=True,
        )  # fmt: skip
    theirs.close()
    _spare = (popen, ours)


def spare_take(*, python: str, listening: socket.socket, app: str, env: dict[str, str], cwd: Path,
               paths_first: list[str], paths_last: list[str], log_path: Path) -> subprocess.Popen | None:  # fmt: skip
    """The spare server, now serving `app` on `listening`; None when there is none (or it runs another Python)."""
    global _spare
    # Compared unresolved: a virtual environment's python links to the same binary but imports other packages. The
    # spare stays for the next server that runs on ours.
    if _spare is None or os.path.abspath(python) != os.path.abspath(sys.executable):
        return None
    spare, _spare = _spare, None
    popen, control = spare
    if popen.poll() is not None:
        control.close()
        return None
    message = {"app": app, "env": env, "cwd": str(cwd), "first": paths_first, "last": paths_last, "log": str(log_path)}
    try:
        socket.send_fds(control, [json.dumps(message).encode()], [listening.fileno()])
    except OSError:
        popen.kill()
        return None
    finally:
        control.close()
    return popen


def spare_close() -> None:
    global _spare
    spare, _spare = _spare, None
    if spare is not None:
        spare[1].close()  # it reads end-of-file and exits
        try:
            spare[0].wait(timeout=5)
        except subprocess.TimeoutExpired:
            spare[0].kill()
