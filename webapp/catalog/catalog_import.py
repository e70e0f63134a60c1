"""A team's environments from OpenEnv catalog cards: read a catalog (a git repository or a snapshot JSON), add the
chosen cards as versions pinned to the card's revision, check a source for updates, export what was taken as a
snapshot OpenEnv's loader accepts. The card format and its comparison are OpenEnv's (envs/catalog_cards.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from envs.catalog_cards import (
    DEFAULT_PUBLISHER,
    DEFAULT_ROOT,
    CatalogError,
    CatalogSnapshot,
    DiscoveryEntry,
    card_summary,
    catalog_compare,
    catalog_of_repository,
    complete_part,
    repository_identity,
    snapshot_json,
    snapshot_load,
    snapshot_of_paths,
)
from envs.git_source import GitSourceError, git_repository, git_tree_id
from webapp.accounts.models import Role, Team
from webapp.accounts.selectors import membership_require
from webapp.catalog.deployments import sources_cache_dir
from webapp.catalog.models import CatalogSource, Environment, EnvironmentVersion, SourceKind

MAX_SNAPSHOT_BYTES = 16 * 1024 * 1024


@dataclass
class CatalogRead:
    """One read of a catalog: OpenEnv's snapshot, and where its environments' folders are fetched from."""

    snapshot: CatalogSnapshot
    fetch_url: str
    ref: str = ""
    root: str = DEFAULT_ROOT
    repository_uri: str = ""
    stand_in: bool = False
    publisher: str = DEFAULT_PUBLISHER
    from_snapshot: bool = False

    @property
    def cards(self) -> list[DiscoveryEntry]:
        return list(complete_part(self.snapshot).entries)

    @property
    def issues(self) -> list[dict[str, str]]:
        """Folders whose metadata OpenEnv could not read (left out of the cards), and its warnings."""
        return [{"path": i.path, "severity": i.severity, "message": i.message} for i in self.snapshot.issues]

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.fetch_url, "ref": self.ref, "root": self.root, "revision": self.snapshot.source.revision,
                "repository_uri": self.repository_uri, "stand_in_identity": self.stand_in,
                "publisher": self.publisher, "digest": self.snapshot.digest,
                "cards": [card_summary(e) for e in self.cards], "issues": self.issues}  # fmt: skip


def _as_url(source: str) -> str:
    path = Path(source).expanduser()
    if "://" not in source and not source.startswith("git@") and path.is_dir():
        return path.resolve().as_uri()
    return source


def catalog_read(
    *,
    source: str,
    ref: str = "",
    root: str = DEFAULT_ROOT,
    publisher: str = DEFAULT_PUBLISHER,
    repository_uri: str = "",
    fetch_from: str = "",
) -> CatalogRead:
    """Read a catalog: `source` is a git repository (a URL, `file://…`, or a folder on this machine) whose `root`
    holds one folder per environment, or a snapshot JSON file. `fetch_from` replaces the repository a snapshot's
    cards name (a mirror, on a machine without the internet)."""
    source = (source or "").strip()
    if not source:
        raise ValidationError({"catalog": "Give a git repository or a catalog snapshot JSON."})
    try:
        if source.endswith(".json") and Path(source).expanduser().is_file():
            path = Path(source).expanduser()
            if path.stat().st_size > MAX_SNAPSHOT_BYTES:
                raise ValidationError({"catalog": f"{source} is larger than {MAX_SNAPSHOT_BYTES // 2**20} MiB."})
            return catalog_from_snapshot(path.read_bytes(), fetch_from=fetch_from)
        url = _as_url(source)
        identity, stand_in = repository_identity(url, repository_uri.strip())
        mirror, commit = git_repository(url, ref, cache_dir=sources_cache_dir())
        snapshot = catalog_of_repository(mirror, repository_uri=identity, revision=commit,
                                         publisher=publisher.strip() or DEFAULT_PUBLISHER,
                                         root=root.strip() or DEFAULT_ROOT)  # fmt: skip
    except GitSourceError as exc:
        raise ValidationError({"catalog": f"The repository could not be read: {exc}"}) from exc
    except CatalogError as exc:
        raise ValidationError({"catalog": f"OpenEnv could not read its catalog: {exc}"}) from exc
    return CatalogRead(snapshot=snapshot, fetch_url=url, ref=ref.strip(), root=snapshot.inventory.root,
                       repository_uri=identity, stand_in=stand_in, publisher=snapshot.publisher)  # fmt: skip


def catalog_from_snapshot(data: bytes, *, fetch_from: str = "") -> CatalogRead:
    """A snapshot JSON (OpenEnv's loader checks it): its cards are fetched from the repository they name, or from
    `fetch_from`."""
    try:
        snapshot = snapshot_load(data)
    except CatalogError as exc:
        raise ValidationError({"catalog": f"Not an OpenEnv catalog snapshot: {exc}"}) from exc
    return CatalogRead(snapshot=snapshot, fetch_url=_as_url(fetch_from.strip()) or snapshot.source.uri,
                       ref=snapshot.source.revision, root=snapshot.inventory.root,
                       repository_uri=snapshot.source.uri, publisher=snapshot.publisher,
                       from_snapshot=True)  # fmt: skip


def cards_chosen(read: CatalogRead, only: list[str] | None) -> list[DiscoveryEntry]:
    """The cards named by `only` (card names or folder names, any case); all of them when None."""
    cards = read.cards
    if not cards:
        raise ValidationError({"catalog": "The catalog holds no environment card"
                               + (f" ({read.issues[0]['path']}: {read.issues[0]['message']})" if read.issues else "")
                               + "."})  # fmt: skip
    if not only:
        return cards
    wanted = {name.strip().lower() for name in only if name.strip()}
    chosen = [c for c in cards if c.display_name.lower() in wanted or Path(c.data.source.path).name.lower() in wanted]
    found = {c.display_name.lower() for c in chosen} | {Path(c.data.source.path).name.lower() for c in chosen}
    missing = sorted(wanted - found)
    if missing:
        names = ", ".join(sorted(c.display_name for c in cards))
        raise ValidationError({"only": f"No card named {missing[0]!r} in the catalog (cards: {names})."})
    return chosen


@dataclass
class CardOutcome:
    name: str
    path: str
    status: str  # added, new_version, unchanged, failed
    slug: str = ""
    version: str = ""
    error: str = ""

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v != ""}


def _source_record(*, team: Team, user, read: CatalogRead) -> CatalogSource:
    source, _ = CatalogSource.objects.get_or_create(
        team=team, fetch_url=read.fetch_url, root=read.root,
        defaults={"repository_uri": read.repository_uri, "publisher": read.publisher, "created_by": user},
    )  # fmt: skip
    source.ref = read.ref if not read.from_snapshot else source.ref
    source.repository_uri = read.repository_uri
    source.stand_in_identity = read.stand_in
    source.publisher = read.publisher
    source.from_snapshot = read.from_snapshot
    source.snapshot = snapshot_json(read.snapshot)
    source.read_at = timezone.now()
    source.save()
    return source


def _pinned_tree(version: EnvironmentVersion) -> str:
    commit = version.pinned_ref.removeprefix("git:")
    return git_tree_id(version.source_ref, commit, version.git_subdir, cache_dir=sources_cache_dir())


def catalog_import(
    *,
    team: Team,
    user,
    read: CatalogRead,
    only: list[str] | None = None,
    progress: Callable[[str, float], None] = lambda message, fraction: None,
) -> list[CardOutcome]:
    """Add the chosen cards: a new environment for a card the team has not taken from this source, a new version
    (pinned to the card's revision, keeping its card) where the folder's files changed, nothing where they did not.
    One card that fails to start never stops the others; its outcome says why."""
    from webapp.catalog.services import environment_create, version_add

    if user is not None:
        membership_require(user=user, team=team, role=Role.MEMBER)
    cards = cards_chosen(read, only)
    with transaction.atomic():
        source = _source_record(team=team, user=user, read=read)
    outcomes = []
    for index, card in enumerate(cards):
        path, name = card.data.source.path, card.display_name
        revision = card.data.source.revision

        def phase(message: str, index: int = index, name: str = name) -> None:
            progress(f"{name}: {message}", (index + 0.5) / len(cards))

        phase("fetching and starting it")
        environment = Environment.objects.filter(team=team, catalog_source=source, catalog_path=path).first()
        card_json = card.model_dump(by_alias=True, exclude_none=True, mode="json")
        common = {"user": user, "source_kind": SourceKind.GIT, "source_ref": read.fetch_url, "git_ref": revision,
                  "git_subdir": path, "progress": phase}  # fmt: skip
        try:
            if environment is None:
                slug = slugify(name)
                if Environment.objects.filter(team=team, slug=slug).exists():
                    slug = slugify(f"{name}-{Path(path).name}") if slugify(Path(path).name) != slug else slug
                environment = environment_create(team=team, name=name, slug=slug, description=card.description,
                                                 tags=sorted({t.lower() for t in card.tags}), **common)  # fmt: skip
                Environment.objects.filter(pk=environment.pk).update(catalog_source=source, catalog_path=path)
                version = environment.versions.get()
                status = "added"
            else:
                latest = environment.latest_version()
                current = git_tree_id(read.fetch_url, revision, path, cache_dir=sources_cache_dir())
                if latest is not None and latest.source_kind == SourceKind.GIT and current and \
                        _pinned_tree(latest) == current:  # fmt: skip
                    outcomes.append(CardOutcome(name, path, "unchanged", environment.slug, latest.label))
                    continue
                version = version_add(environment=environment, label=_next_label(environment), **common)
                status = "new_version"
        except ValidationError as exc:
            messages = [m for ms in (exc.message_dict.values() if hasattr(exc, "error_dict") else [exc.messages])
                        for m in ms]  # fmt: skip
            outcomes.append(CardOutcome(name, path, "failed", error="; ".join(messages)[:1000]))
            continue
        EnvironmentVersion.objects.filter(pk=version.pk).update(catalog_card=card_json)
        outcomes.append(CardOutcome(name, path, status, environment.slug, version.label))
    progress("done", 1.0)
    return outcomes


def _next_label(environment: Environment) -> str:
    labels = set(environment.versions.values_list("label", flat=True))
    number = environment.versions.count() + 1
    while f"{number}.0.0" in labels:
        number += 1
    return f"{number}.0.0"


@dataclass
class UpdateRow:
    kind: str  # OpenEnv's: added, withdrawn, superseded, corrected
    path: str
    name: str
    revision: str = ""
    slug: str = ""  # the team's environment taken from this path, if any
    files_changed: bool | None = None  # since that environment's latest version (None: not taken)
    offer: str = ""  # add, new_version, or nothing

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class UpdateCheck:
    source: CatalogSource
    read: CatalogRead
    rows: list[UpdateRow] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source.pk, "revision": self.read.snapshot.source.revision,
                "changes": [r.as_dict() for r in self.rows], "issues": self.read.issues}  # fmt: skip


def catalog_updates(*, source: CatalogSource, user) -> UpdateCheck:
    """Read a source again and compare with what the team last took from it, as OpenEnv compares catalogs; for each
    environment the team took, whether its folder's files changed since its latest version (a new commit makes
    every card a new revision card, "superseded", even where the folder did not change)."""
    if user is not None:
        membership_require(user=user, team=source.team, role=Role.MEMBER)
    if source.from_snapshot:
        raise ValidationError({"catalog": "This catalog was read from a snapshot file: read a newer snapshot with "
                                          "`env add --catalog FILE` to compare."})  # fmt: skip
    read = catalog_read(source=source.fetch_url, ref=source.ref, root=source.root, publisher=source.publisher,
                        repository_uri="" if source.stand_in_identity else source.repository_uri)  # fmt: skip
    previous = CatalogSnapshot.model_validate(source.snapshot)
    try:
        changes = catalog_compare(previous, read.snapshot)
    except CatalogError as exc:
        raise ValidationError({"catalog": f"OpenEnv cannot compare the two reads: {exc}"}) from exc
    taken = {e.catalog_path: e for e in source.environments.all()}
    rows = []
    for change in changes:
        row = UpdateRow(change.kind, change.path, change.name,
                        change.current.data.source.revision if change.current else "")  # fmt: skip
        environment = taken.get(change.path)
        if environment is not None:
            row.slug = environment.slug
            latest = environment.latest_version()
            if change.current is not None and latest is not None:
                current = git_tree_id(read.fetch_url, row.revision, change.path, cache_dir=sources_cache_dir())
                row.files_changed = not current or _pinned_tree(latest) != current
                row.offer = "new_version" if row.files_changed else ""
        elif change.kind in ("added", "superseded", "corrected"):
            row.offer = "add"
        rows.append(row)
    return UpdateCheck(source=source, read=read, rows=rows)


def catalog_export(*, team: Team, source: CatalogSource | None = None) -> CatalogSnapshot:
    """What the team took from a catalog source, as a complete OpenEnv snapshot (its cards at the revision it was
    last taken from). One snapshot holds one repository at one revision: a team with several sources exports each."""
    sources = CatalogSource.objects.filter(team=team, environments__isnull=False).distinct()
    source = source or sources.first()
    if source is None or source.team_id != team.pk:
        raise ValidationError({"source": f"{team.name} has no environment taken from a catalog yet."})
    paths = set(source.environments.values_list("catalog_path", flat=True))
    return snapshot_of_paths(CatalogSnapshot.model_validate(source.snapshot), paths)
