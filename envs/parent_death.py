"""Die with the parent: a process that serves or trains for one worker must not outlive it.

Linux's PR_SET_PDEATHSIG delivers SIGKILL to this process when the thread that started it exits, however it
exits (SIGKILL included, which no cleanup handler sees). Called first thing in the child; the parent passes its pid
in TRAINYARD_PARENT_PID so that a parent that died before the call is noticed too. Elsewhere than Linux it does
nothing, and the reaper's process-group kill remains the only cleanup.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT_PID_VARIABLE = "TRAINYARD_PARENT_PID"


def die_with_parent() -> bool:
    """True when armed. Exits at once when the expected parent is already gone."""
    expected = os.environ.get(PARENT_PID_VARIABLE, "")
    if not sys.platform.startswith("linux") or not expected.isdigit():
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return False
    if os.getppid() != int(expected):
        os._exit(1)  # the parent died before we could ask to follow it
    return True


def child_environment() -> dict[str, str]:
    """What a parent adds to a child's environment so that die_with_parent() knows whom to follow."""
    return {PARENT_PID_VARIABLE: str(os.getpid())}
