"""`--smoke`: every bench's few-seconds mode at tiny sizes. `make test` runs each bench so (tests/test_benches.py), so
a bench that can no longer run fails CI; the figures of a smoke run mean nothing, and its JSON line says
`"smoke": true`. Benches also share their cache folder with the demo (`var/cache`: the tiny model is built once)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

SMOKE = "--smoke" in sys.argv
HELP = "a few seconds at tiny sizes: does the bench still run? (make test runs every bench so)"

os.environ.setdefault("TRAINYARD_CACHE_DIR", str(Path(__file__).resolve().parent.parent / "var" / "cache"))


def smoke_marked(line: dict) -> dict:
    """The bench's JSON line, marked when it measured nothing worth keeping."""
    return {**line, "smoke": True} if SMOKE else line
