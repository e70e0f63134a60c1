"""A run followed from a terminal: a progress bar of its steps with its status, until it ends."""

from __future__ import annotations

import time
from typing import TextIO

from tqdm import tqdm

from webapp.runs.models import FINAL_STATUSES, Run


def run_follow(run: Run, *, file: TextIO, timeout: float = float("inf"), poll: float = 1.0) -> Run:
    bar = tqdm(total=run.max_steps, desc=run.name, unit="step", file=file)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        bar.n = run.step
        bar.set_postfix_str(run.status)
        bar.refresh()
        if run.status in FINAL_STATUSES:
            break
        time.sleep(poll)
    bar.close()
    return run
