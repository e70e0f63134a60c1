"""The artifact store: every file that another process or another host reads goes through here.

A worker writes a run's files on its own disk first (its data folder: webapp.artifacts.layout) and publishes them to
the store: the trainer log as it grows, each checkpoint once complete, the final model, evaluation logs, the tiny
model, warm starts and folder environments' snapshots. Pages, downloads and workers on other hosts read the store,
never a worker's disk. So hosts of one deployment share nothing but PostgreSQL, Redis and the store.

Two backends behind one interface, chosen by one setting, `TRAINYARD_ARTIFACTS` (a URL):
- `file:///srv/trainyard` — a folder; also what a shared mount (NFS, a read-write-many volume) gives every host.
  The default is `artifacts/` inside the data folder, which is right for one machine.
- `s3://bucket/prefix` — S3-compatible object storage through s3fs (fsspec). Credentials and the endpoint come
  from the usual variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL` for MinIO, Ceph and
  the like). Large files go up in parts (s3fs's multipart upload) and come down streamed.

Keys are relative POSIX paths (`runs/12/trainer.log`); layout.py names them. A folder that is published whole
(a checkpoint, a model) is complete once its marker file exists: the marker is written last, so a reader never
takes a half-uploaded folder for a whole one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import BinaryIO
from urllib.parse import urlparse

CHUNK = 1 << 20


class StoreError(RuntimeError):
    """The store could not be read or written (unreachable, refused, a bad key)."""


def _checked(key: str) -> str:
    """A key as the store takes it: relative, normalised, never climbing out of the store."""
    path = PurePosixPath(key.strip("/"))
    if not key.strip("/") or ".." in path.parts or path.is_absolute():
        raise StoreError(f"not a store key: {key!r}")
    return str(path)


class ArtifactStore(ABC):
    """What every backend offers. Keys name files; a prefix names a folder of them."""

    url: str

    # -- reading -----------------------------------------------------------------------------------------------
    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def size(self, key: str) -> int | None:
        """The file's size in bytes; None when there is no such file."""

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """The file for reading, streamed from the store (raises FileNotFoundError when absent)."""

    @abstractmethod
    def listdir(self, prefix: str) -> list[str]:
        """The names directly under a prefix (files and folders), sorted; [] when there is nothing."""

    @abstractmethod
    def files(self, prefix: str) -> list[tuple[str, int]]:
        """Every file under a prefix as (path relative to it, size), sorted."""

    # -- writing -----------------------------------------------------------------------------------------------
    @abstractmethod
    def put_file(self, local: Path, key: str) -> None:
        """Upload one file (a reader never sees it half-written)."""

    @abstractmethod
    def append_file(self, local: Path, key: str, known: int) -> int:
        """Bring the stored copy of a growing file (a log) up to date, given how many bytes the store already has;
        returns how many it has now."""

    @abstractmethod
    def delete(self, prefix: str) -> None:
        """Remove a file or a whole folder (nothing happens when it is absent)."""

    @abstractmethod
    def check(self) -> str:
        """'' when the store can be written and read back here, else why not (for the Workers page)."""

    # -- built on the above ------------------------------------------------------------------------------------
    def read_bytes(self, key: str, *, start: int = 0, limit: int | None = None) -> bytes:
        with self.open(key) as handle:
            if start:
                handle.seek(start)
            return handle.read() if limit is None else handle.read(limit)

    def read_text(self, key: str, default: str | None = None) -> str:
        try:
            return self.read_bytes(key).decode(errors="replace")
        except FileNotFoundError:
            if default is None:
                raise
            return default

    def chunks(self, key: str, size: int = CHUNK) -> Iterator[bytes]:
        with self.open(key) as handle:
            while block := handle.read(size):
                yield block

    def write_bytes(self, key: str, data: bytes) -> None:
        with tempfile.NamedTemporaryFile(delete=False) as handle:
            handle.write(data)
        try:
            self.put_file(Path(handle.name), key)
        finally:
            os.unlink(handle.name)

    def put_tree(self, local: Path, prefix: str, *, marker: str | None = None) -> int:
        """Upload a folder; `marker` (a file inside it) goes last so that its presence means "complete". The
        bytes uploaded."""
        prefix = _checked(prefix)
        paths = sorted(p for p in Path(local).rglob("*") if p.is_file())
        paths.sort(key=lambda p: p.relative_to(local).as_posix() == marker)  # the marker last
        total = 0
        for path in paths:
            self.put_file(path, f"{prefix}/{path.relative_to(local).as_posix()}")
            total += path.stat().st_size
        return total

    def get_tree(self, prefix: str, local: Path) -> Path:
        """Download a folder to `local` (written beside it, then renamed: it appears whole or not at all)."""
        prefix = _checked(prefix)
        listed = self.files(prefix)
        if not listed:
            raise FileNotFoundError(f"{prefix} is not in the artifact store ({self.url})")
        local = Path(local)
        local.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{local.name}.", dir=local.parent))
        try:
            for name, _size in listed:
                target = partial / name
                target.parent.mkdir(parents=True, exist_ok=True)
                self.get_file(f"{prefix}/{name}", target)
            shutil.rmtree(local, ignore_errors=True)
            partial.rename(local)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        return local

    def get_file(self, key: str, target: Path) -> None:
        """One file down to `target`, streamed."""
        with self.open(key) as source, Path(target).open("wb") as sink:
            shutil.copyfileobj(source, sink, CHUNK)

    def tree_size(self, prefix: str) -> int:
        return sum(size for _name, size in self.files(prefix))


class FolderStore(ArtifactStore):
    """A folder on this host, or a shared mount every host sees at its own path."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.url = self.root.as_uri()

    def _path(self, key: str) -> Path:
        return self.root / _checked(key)

    def exists(self, key: str) -> bool:
        return self._path(key).exists()

    def size(self, key: str) -> int | None:
        path = self._path(key)
        return path.stat().st_size if path.is_file() else None

    def open(self, key: str) -> BinaryIO:
        return self._path(key).open("rb")

    def listdir(self, prefix: str) -> list[str]:
        folder = self._path(prefix)
        return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []

    def files(self, prefix: str) -> list[tuple[str, int]]:
        folder = self._path(prefix)
        if not folder.is_dir():
            return []
        return sorted(
            (p.relative_to(folder).as_posix(), p.stat().st_size)
            for p in folder.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )

    def put_file(self, local: Path, key: str) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        # One name per writer, made by the copy itself: a file created first and then truncated by the copy is
        # ext4's "replace via truncate" pattern, which it flushes to disk at close (auto_da_alloc): twice as slow.
        partial = target.parent / f".{target.name}.{uuid.uuid4().hex}"
        try:
            shutil.copyfile(local, partial)  # the kernel's copy (copy_file_range / sendfile) where it can
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise

    def get_file(self, key: str, target: Path) -> None:
        shutil.copyfile(self._path(key), target)  # the kernel's copy, as put_file

    def append_file(self, local: Path, key: str, known: int) -> int:
        target = self._path(key)
        size = Path(local).stat().st_size
        if target.exists() and known == target.stat().st_size and size >= known:
            if size > known:
                with Path(local).open("rb") as source, target.open("ab") as sink:
                    source.seek(known)
                    shutil.copyfileobj(source, sink, CHUNK)
            return size
        self.put_file(Path(local), key)  # first time, or the store's copy is not what we think: the whole file
        return size

    def delete(self, prefix: str) -> None:
        path = self._path(prefix)
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

    def check(self) -> str:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = f".probe-{os.uname().nodename}-{os.getpid()}"
            self.write_bytes(probe, b"ok")
            ok = self.read_bytes(probe) == b"ok"
            self.delete(probe)
        except OSError as exc:
            return f"the folder {self.root} cannot be written: {exc}"
        return "" if ok else f"the folder {self.root} did not give back what was written"


class S3Store(ArtifactStore):
    """S3-compatible object storage (AWS S3, MinIO, Ceph's gateway, ...) through s3fs."""

    def __init__(self, url: str, **options) -> None:
        import s3fs

        parsed = urlparse(url)
        if not parsed.netloc:
            raise StoreError(f"{url}: an S3 store URL names its bucket (s3://bucket/prefix)")
        self.url = url
        self.bucket = parsed.netloc
        self.base = f"{self.bucket}/{parsed.path.strip('/')}".rstrip("/")
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:
            options.setdefault("endpoint_url", endpoint)
        # No cached listings: another host publishes while this one reads.
        self.fs = s3fs.S3FileSystem(use_listings_cache=False, skip_instance_cache=True, **options)

    def _path(self, key: str) -> str:
        return f"{self.base}/{_checked(key)}"

    def exists(self, key: str) -> bool:
        try:
            return self.fs.exists(self._path(key))
        except OSError as exc:
            raise StoreError(str(exc)) from exc

    def size(self, key: str) -> int | None:
        try:
            info = self.fs.info(self._path(key))
        except FileNotFoundError:
            return None
        return int(info["size"]) if info.get("type") == "file" else None

    def open(self, key: str) -> BinaryIO:
        return self.fs.open(self._path(key), "rb", block_size=CHUNK * 5)

    def listdir(self, prefix: str) -> list[str]:
        try:
            entries = self.fs.ls(self._path(prefix), detail=False)
        except FileNotFoundError:
            return []
        return sorted(name.rstrip("/").rsplit("/", 1)[-1] for name in entries)

    def files(self, prefix: str) -> list[tuple[str, int]]:
        root = self._path(prefix)
        try:
            found = self.fs.find(root, detail=True)
        except FileNotFoundError:
            return []
        return sorted((name[len(root) + 1 :], int(info["size"])) for name, info in found.items()
                      if info.get("type") == "file" and name.startswith(root + "/"))  # fmt: skip

    def put_file(self, local: Path, key: str) -> None:
        self.fs.put_file(str(local), self._path(key))  # multipart above s3fs's part size

    def append_file(self, local: Path, key: str, known: int) -> int:
        size = Path(local).stat().st_size
        if size != known:  # objects cannot grow in place: the whole log again (logs stay small)
            self.put_file(Path(local), key)
        return size

    def delete(self, prefix: str) -> None:
        path = self._path(prefix)
        try:
            if self.fs.exists(path):
                self.fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass

    def check(self) -> str:
        probe = f".probe-{os.uname().nodename}-{os.getpid()}"
        try:
            self.write_bytes(probe, b"ok")
            ok = self.read_bytes(probe) == b"ok"
            self.delete(probe)
        except Exception as exc:  # any botocore/aiohttp error: the page shows it
            return f"{self.url} cannot be written: {type(exc).__name__}: {exc}"[:500]
        return "" if ok else f"{self.url} did not give back what was written"


def store_for(url: str) -> ArtifactStore:
    """The store a `TRAINYARD_ARTIFACTS` URL names."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return FolderStore(Path(parsed.path))
    if parsed.scheme == "s3":
        return S3Store(url)
    if not parsed.scheme and url.startswith("/"):
        return FolderStore(Path(url))
    raise StoreError(f"TRAINYARD_ARTIFACTS={url!r}: use file:///a/folder or s3://bucket/prefix")


@lru_cache(maxsize=4)
def _store(url: str) -> ArtifactStore:
    return store_for(url)


def artifact_store() -> ArtifactStore:
    """This deployment's store (settings.ARTIFACTS_URL)."""
    from django.conf import settings

    return _store(settings.ARTIFACTS_URL)
