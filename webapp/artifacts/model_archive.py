"""A saved model as a streamed .tar.gz, read from the artifact store as it is sent: the browser starts receiving at
once and the web process never holds the archive (models run to gigabytes). Optimizer and scheduler state stay out:
they resume a run, not use a model."""

from __future__ import annotations

import tarfile
import time
import zlib
from collections.abc import Iterator

from webapp.artifacts.saved_models import SavedModel
from webapp.artifacts.store import artifact_store

LEFT_OUT = ("optimizer.pt", "scheduler.pt", "training_args.bin")


def archive_members(saved: SavedModel) -> list[tuple[str, int]]:
    """(path inside the model's folder, size) of what the archive holds."""
    return [
        (name, size) for name, size in artifact_store().files(saved.key)
        if name.rsplit("/", 1)[-1] not in LEFT_OUT and not name.rsplit("/", 1)[-1].startswith("rng_state")
    ]  # fmt: skip


def archive_stream(saved: SavedModel, *, top: str) -> Iterator[bytes]:
    """The tar stream written by hand (a header, the file in blocks, padding) and gzipped as it goes: no file is
    ever held whole, however large."""
    gzip = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    for piece in _tar_pieces(saved, top):
        out = gzip.compress(piece)
        if out:
            yield out
    yield gzip.flush()


def _tar_pieces(saved: SavedModel, top: str) -> Iterator[bytes]:
    store = artifact_store()
    now = int(time.time())
    for name, size in archive_members(saved):
        info = tarfile.TarInfo(f"{top}/{name}")
        info.size, info.mtime, info.mode = size, now, 0o644
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        yield from store.chunks(f"{saved.key}/{name}")
        if size % tarfile.BLOCKSIZE:
            yield b"\0" * (tarfile.BLOCKSIZE - size % tarfile.BLOCKSIZE)
    yield b"\0" * (2 * tarfile.BLOCKSIZE)
