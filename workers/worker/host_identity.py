"""What "this host" means when pids are compared: the hostname and the pid namespace.

Containers on the host network share the host's hostname but each has its own pids; a worker may only judge a
process gone by its pid when it shares that process's pid namespace. So a run records where it executes as
`HOST#NAMESPACE:PID` (the namespace is /proc/self/ns/pid's inode; left out where there is none)."""

from __future__ import annotations

import os
import socket


def host_identity() -> str:
    try:
        namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:[").removesuffix("]")
    except OSError:
        return socket.gethostname()
    return f"{socket.gethostname()}#{namespace}"


def process_identity(pid: int | None = None) -> str:
    return f"{host_identity()}:{pid if pid is not None else os.getpid()}"
