"""A saved model as a streamed .tar.gz: the browser starts receiving at once and the web process never holds the
archive (models run to gigabytes). Optimizer and scheduler state stay out: they resume a run, not use a model."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator

from webapp.artifacts.saved_models import SavedModel

LEFT_OUT = ("optimizer.pt", "scheduler.pt", "training_args.bin")


class _Chunks:
    """A write-only file that hands what tarfile writes to the response in pieces."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.pending.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self.pending = b"".join(self.pending), []
        return out


def archive_members(saved: SavedModel) -> list:
    return sorted(
        p for p in saved.path.rglob("*")
        if p.is_file() and p.name not in LEFT_OUT and not p.name.startswith("rng_state")
    )  # fmt: skip


def archive_stream(saved: SavedModel, *, top: str) -> Iterator[bytes]:
    sink = _Chunks()
    with tarfile.open(fileobj=sink, mode="w|gz") as tar:
        for path in archive_members(saved):
            with path.open("rb") as handle:
                info = tar.gettarinfo(str(path), arcname=f"{top}/{path.relative_to(saved.path)}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, handle)
            chunk = sink.take()
            if chunk:
                yield chunk
    yield sink.take()
