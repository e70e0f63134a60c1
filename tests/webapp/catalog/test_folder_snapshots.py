"""A folder environment runs as it was pinned, on any host: from the folder itself where this host has it unchanged,
else from the snapshot the adding host put in the artifact store — never from whatever the path holds now."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envs.providers import ProvisionError
from envs.providers.base import content_hash
from webapp.catalog.deployments import source_for
from webapp.catalog.folder_snapshots import pinned_folder, snapshot_publish

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "envs" / "metadata_maze"


@pytest.fixture
def host(settings, tmp_path):
    """This host's store and cache, apart from every other test's."""
    settings.ARTIFACTS_URL = (tmp_path / "store").as_uri()
    settings.CACHE_DIR = tmp_path / "cache"
    return tmp_path


def a_folder(host) -> tuple[Path, str]:
    folder = host / "added-here" / "maze"
    shutil.copytree(FIXTURE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder, "sha256:" + content_hash(folder)


def test_a_host_with_the_folder_unchanged_runs_it_in_place(host):
    folder, pinned = a_folder(host)
    assert pinned_folder(str(folder), pinned) == folder.resolve()


def test_a_host_without_the_folder_runs_the_store_s_snapshot_byte_for_byte(host):
    folder, pinned = a_folder(host)
    snapshot_publish(folder, pinned)
    kept = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    shutil.rmtree(folder)  # another machine: the path means nothing there

    extracted = pinned_folder(str(folder), pinned)
    assert extracted.is_relative_to(host / "cache") and "sha256:" + content_hash(extracted) == pinned
    assert {p.relative_to(extracted): p.read_bytes() for p in extracted.rglob("*") if p.is_file()} == kept
    assert source_for(source_kind="folder", source_ref=str(folder), pinned=pinned).reference == str(extracted)


def test_a_folder_edited_after_it_was_pinned_runs_as_pinned(host):
    folder, pinned = a_folder(host)
    snapshot_publish(folder, pinned)
    (folder / "server" / "app.py").write_text("raise SystemExit('edited after pinning')\n")

    used = pinned_folder(str(folder), pinned)
    assert used != folder.resolve()
    assert "edited after pinning" not in (used / "server" / "app.py").read_text()


def test_neither_folder_nor_snapshot_is_a_clear_provisioning_error(host):
    with pytest.raises(ProvisionError, match="is not on this host, and the artifact store has no snapshot"):
        source_for(source_kind="folder", source_ref=str(host / "nowhere"), pinned="sha256:" + "ab" * 32)


def test_a_hostile_snapshot_cannot_write_outside_its_folder(host):
    import io
    import tarfile

    from webapp.artifacts.layout import folder_snapshot_key
    from webapp.artifacts.store import artifact_store

    pinned = "sha256:" + "cd" * 32
    body = io.BytesIO()
    with tarfile.open(fileobj=body, mode="w:gz") as tar:
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    artifact_store().write_bytes(folder_snapshot_key(pinned), body.getvalue())

    with pytest.raises(tarfile.TarError):
        pinned_folder(str(host / "nowhere"), pinned)
    assert not list(host.rglob("escaped.txt"))
