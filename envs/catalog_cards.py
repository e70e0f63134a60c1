"""OpenEnv catalog cards in and out, through OpenEnv's own `openenv.discovery` (RFC 011): never our own card format.

A catalog snapshot lists the environments of one git repository at one commit, one revision-bound card each (name,
description, license, tags, where it lives). Trainyard reads one from a repository (`build_catalog` over this
machine's mirror of it; no code of the repository is imported) or from a snapshot JSON (`load_catalog`), compares
two reads of the same source (`compare_catalogs`: added, withdrawn, superseded, corrected), searches one
(`search_catalog`), and writes one back for the environments a team took from it.

OpenEnv's profile names a repository by its GitHub HTTPS identity. A repository elsewhere (a `file://` path, a
company's git server) is named by the identity its importer gives, or by a stand-in `https://github.com/local/
NAME.git`; the repository Trainyard really fetches is kept beside the card, never inferred from it.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from openenv.discovery import CatalogError, CatalogSnapshot, DiscoveryEntry, build_catalog, load_catalog
from openenv.discovery import compare_catalogs as openenv_compare
from openenv.discovery import search_catalog as openenv_search
from openenv.discovery.serialization import catalog_digest

DEFAULT_PUBLISHER = "trainyard.local"
DEFAULT_ROOT = "envs"

__all__ = ["CatalogError", "CatalogSnapshot", "DiscoveryEntry", "card_summary", "catalog_compare",
           "catalog_of_repository", "catalog_search", "complete_part", "repository_identity", "snapshot_json",
           "snapshot_load", "snapshot_of_paths"]  # fmt: skip


def repository_identity(url: str, given: str = "") -> tuple[str, bool]:
    """The GitHub HTTPS identity OpenEnv's cards name a repository by, and whether it is a stand-in (the repository
    is not on GitHub and nobody gave one)."""
    if given:
        return given, False
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.netloc.lower() == "github.com":
        path = parts.path.strip("/").removesuffix(".git")
        if re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", path):
            return f"https://github.com/{path}.git", False
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", Path(parts.path.rstrip("/")).name.removesuffix(".git")) or "repository"
    return f"https://github.com/local/{name.strip('.') or 'repository'}.git", True


def catalog_of_repository(
    mirror: Path, *, repository_uri: str, publisher: str, revision: str, root: str = DEFAULT_ROOT
) -> CatalogSnapshot:
    """OpenEnv's catalog of the environment folders (`ROOT/NAME/openenv.yaml`) of a repository at one commit."""
    return build_catalog(mirror, repository_uri=repository_uri, publisher=publisher, revision=revision, root=root)


def snapshot_load(data: bytes | str) -> CatalogSnapshot:
    """A snapshot JSON, read by OpenEnv's own loader (its size bound, duplicate keys, schema and digest checks)."""
    raw = data.encode() if isinstance(data, str) else data
    with tempfile.NamedTemporaryFile(suffix=".json") as handle:
        handle.write(raw)
        handle.flush()
        return load_catalog(handle.name)


def snapshot_json(snapshot: CatalogSnapshot) -> dict[str, Any]:
    """The snapshot as OpenEnv writes it (`write_catalog`'s form): aliases, nothing empty."""
    return snapshot.model_dump(by_alias=True, exclude_none=True, mode="json")


def snapshot_of_paths(snapshot: CatalogSnapshot, paths: list[str] | set[str]) -> CatalogSnapshot:
    """The same source and revision with only the cards of `paths`: a complete snapshot of what was chosen (its
    inventory is those paths; the digest is computed again, as OpenEnv's loader checks it)."""
    keep = set(paths)
    entries = [e for e in snapshot.entries if e.data.source.path in keep]
    chosen = snapshot.model_copy(update={
        "entries": entries, "issues": [],
        "inventory": snapshot.inventory.model_copy(update={"paths": sorted(e.data.source.path for e in entries)}),
        "complete": True, "digest": "sha256:" + "0" * 64,
    })  # fmt: skip
    chosen = CatalogSnapshot.model_validate(snapshot_json(chosen))
    return chosen.model_copy(update={"digest": catalog_digest(chosen)})


def complete_part(snapshot: CatalogSnapshot) -> CatalogSnapshot:
    """The snapshot's readable cards as a complete snapshot: folders whose metadata failed are left out (the
    caller shows `snapshot.issues`), so one broken folder never hides the others."""
    if snapshot.complete:
        return snapshot
    return snapshot_of_paths(snapshot, {e.data.source.path for e in snapshot.entries})


def entry_digest(entry: DiscoveryEntry) -> str:
    body = json.dumps(entry.model_dump(by_alias=True, exclude_none=True, mode="json"), sort_keys=True,
                      separators=(",", ":"))  # fmt: skip
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def card_summary(entry: DiscoveryEntry) -> dict[str, Any]:
    """What a person chooses a card by: name, description, license, tags, where it lives, revision and digest."""
    source = entry.data.source
    return {
        "name": entry.display_name,
        "description": entry.description,
        "license": entry.data.license,
        "tags": list(entry.tags),
        "path": source.path,
        "revision": source.revision,
        "identifier": entry.identifier,
        "digest": entry_digest(entry),
    }


def catalog_search(snapshot: CatalogSnapshot, query: str, *, limit: int = 100) -> list[DiscoveryEntry]:
    """OpenEnv's lexical search over the cards (name, description, tags, declared tools); all cards for no query."""
    snapshot = complete_part(snapshot)
    if not query.strip():
        return list(snapshot.entries)
    return [match.entry for match in openenv_search(snapshot, query, limit=limit)]


@dataclass
class CatalogChange:
    """One environment path in OpenEnv's comparison of two reads of a source."""

    kind: str  # added, withdrawn, superseded, corrected
    path: str
    name: str
    previous: DiscoveryEntry | None
    current: DiscoveryEntry | None


def catalog_compare(previous: CatalogSnapshot, current: CatalogSnapshot) -> list[CatalogChange]:
    """OpenEnv's comparison (`compare_catalogs`) of two reads of one source, one row per path that changed."""
    changes = openenv_compare(complete_part(previous), complete_part(current))
    rows = [CatalogChange("added", e.data.source.path, e.display_name, None, e) for e in changes.added]
    rows += [CatalogChange("withdrawn", e.data.source.path, e.display_name, e, None) for e in changes.withdrawn]
    for kind, pairs in (("superseded", changes.superseded), ("corrected", changes.corrected)):
        rows += [CatalogChange(kind, p.current.data.source.path, p.current.display_name, p.previous, p.current)
                 for p in pairs]  # fmt: skip
    return sorted(rows, key=lambda row: row.path)
