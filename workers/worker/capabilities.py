"""What this worker can run, measured once when it starts: CUDA devices, and which optional packages (vllm, peft)
are installed. Recorded in its fleet row so that a run the fleet cannot run is refused before it is queued.

`python -m workers.worker.capabilities` prints them as one JSON line; the worker runs it as a subprocess so that its own
process never imports torch.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[2]


def package_version(name: str) -> str | None:
    if find_spec(name) is None:
        return None
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def measure() -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    return {
        "cuda": cuda,
        "cuda_devices": torch.cuda.device_count() if cuda else 0,
        "gpu_names": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "torch": torch.__version__,
        "vllm": package_version("vllm"),
        "peft": package_version("peft"),
        "trl": package_version("trl"),
    }


def worker_capabilities(timeout: float = 60) -> dict[str, Any]:
    """Measured in a subprocess; on failure, what could be read without torch (and why the rest is unknown)."""
    try:
        result = subprocess.run([sys.executable, "-m", "workers.worker.capabilities"], cwd=REPO_ROOT,
                                capture_output=True, text=True, timeout=timeout)  # fmt: skip
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        log.warning("could not measure this worker's capabilities: %s", exc)
        return {"cuda": False, "cuda_devices": 0, "vllm": package_version("vllm"), "peft": package_version("peft"),
                "unknown": f"measuring failed: {type(exc).__name__}"}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(measure()))
