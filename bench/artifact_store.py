"""Saving and loading a checkpoint through the artifact store vs a plain file copy on the same disk.

A checkpoint-like folder (~500 MB: model weights, optimizer state, small JSON files) is saved (`put_tree`, the
marker last) and loaded back (`get_tree`, written beside and renamed) through the folder backend, and copied there
and back with `shutil.copytree` as the baseline, on the same disk, best of three each. Goal: the store's
save + load take at most 1.2x the plain copy. The S3 backend is measured against moto's local S3-compatible server
(no production object store installs here) and reported, not judged: its figures say what the HTTP path costs.

    python bench/artifact_store.py [--mb 500] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from smoke import HELP, SMOKE, smoke_marked

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def checkpoint(folder: Path, megabytes: int) -> int:
    """Weights (60 %), optimizer state (40 %) and the small files TRL writes; the bytes written."""
    folder.mkdir(parents=True)
    block = os.urandom(1 << 20)
    for name, share in (("model.safetensors", 0.6), ("optimizer.pt", 0.4)):
        with (folder / name).open("wb") as out:
            for _ in range(max(1, int(megabytes * share))):
                out.write(block)
    for name in ("config.json", "scheduler.pt", "rng_state.pth", "tokenizer.json", "trainer_state.json"):
        (folder / name).write_bytes(os.urandom(4096))
    return sum(p.stat().st_size for p in folder.iterdir())


def best_of(times: int, action) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def through_store(store, source: Path, scratch: Path, key: str) -> float:
    def round_trip() -> None:
        store.delete(key)
        store.put_tree(source, key, marker="trainer_state.json")
        store.get_tree(key, scratch / "loaded")

    return best_of(3, round_trip)


def plain_copy(source: Path, scratch: Path) -> float:
    def round_trip() -> None:
        for folder in (scratch / "copied", scratch / "copied-back"):
            shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(source, scratch / "copied")
        shutil.copytree(scratch / "copied", scratch / "copied-back")

    return best_of(3, round_trip)


def s3_seconds(source: Path, scratch: Path) -> float | None:
    """The same round trip against moto's S3 server on this machine (reported only)."""
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError:
        return None
    from webapp.artifacts.store import store_for

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
                          AWS_ENDPOINT_URL=endpoint)  # fmt: skip
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
        return through_store(store_for("s3://bench/store"), source, scratch / "s3", "runs/1/checkpoints/checkpoint-1")
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=500, help="checkpoint size in MB")
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    megabytes = 4 if SMOKE else args.mb
    from webapp.artifacts.store import store_for

    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=os.environ.get("BENCH_DIR")) as scratch:
        scratch = Path(scratch)
        source = scratch / "checkpoint-1"
        size = checkpoint(source, megabytes)
        baseline = plain_copy(source, scratch)
        folder = through_store(store_for((scratch / "store").as_uri()), source, scratch, "runs/1/checkpoints/c-1")
        s3 = s3_seconds(source, scratch)
    ratio = folder / baseline
    print(
        f"checkpoint {size / 1e6:.0f} MB: plain copy there and back {baseline:.2f} s, folder store {folder:.2f} s "
        f"(x{ratio:.2f})" + (f", S3 (moto, reported) {s3:.2f} s" if s3 is not None else ""),
        file=sys.stderr,
    )
    line = {"metric": "artifact_store_save_load_vs_copy", "value": round(ratio, 3), "unit": "ratio", "goal": 1.2,
            "baseline": round(baseline, 3), "store_s": round(folder, 3), "s3_moto_s": s3 and round(s3, 3),
            "megabytes": round(size / 1e6)}  # fmt: skip
    print(json.dumps(smoke_marked(line)))


if __name__ == "__main__":
    main()
