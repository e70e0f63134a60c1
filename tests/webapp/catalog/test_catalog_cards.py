"""OpenEnv catalog cards in and out: a git repository of environment folders read with OpenEnv's own
`openenv.discovery`, its cards added as pinned versions, a commit seen as OpenEnv's "superseded" with a new version
only where the folder's files changed, and the team's catalog written back as a snapshot OpenEnv's loader and schema
accept. A real git repository and real servers; the only stand-in is the repository's GitHub identity (OpenEnv's
cards name repositories by one, and this repository is a folder)."""

from __future__ import annotations

import json
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import jsonschema
import openenv.discovery
import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from openenv.discovery import load_catalog

from webapp.catalog.catalog_import import catalog_export, catalog_import, catalog_read, catalog_updates
from webapp.catalog.models import CatalogSource, Environment

ROOT = Path(__file__).resolve().parents[3]
FIXTURE_ENVS = ROOT / "tests" / "fixtures" / "envs"
SCHEMA = Path(openenv.discovery.__file__).parent / "schemas" / "0.1-draft" / "catalog.schema.json"

pytestmark = pytest.mark.django_db


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def catalog_repository(tmp_path: Path) -> Path:
    """A repository like OpenEnv's own: envs/<name>/ with an openenv.yaml each (and one folder whose manifest has
    no description, which OpenEnv leaves out of the catalog with an issue)."""
    repo = tmp_path / "team-envs"
    envs = repo / "envs"
    envs.mkdir(parents=True)
    shutil.copytree(ROOT / "envs" / "guess_number", envs / "guess_number", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("metadata_maze", "legal_moves", "lucky_numbers"):
        shutil.copytree(FIXTURE_ENVS / name, envs / name, ignore=shutil.ignore_patterns("__pycache__"))
    (envs / "draft").mkdir()
    (envs / "draft" / "openenv.yaml").write_text("spec_version: 1\nname: draft\n")
    (repo / "README.md").write_text("Our environments.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=alice", "-c", "user.email=alice@example.com", "add", "-A")
    git(repo, "-c", "user.name=alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "three envs")
    return repo


def commit_change(repo: Path, folder: str) -> str:
    manifest = repo / "envs" / folder / "openenv.yaml"
    manifest.write_text(manifest.read_text().replace("description: ", "description: (v2) "))
    git(repo, "-c", "user.name=bob", "-c", "user.email=bob@example.com", "commit", "-q", "-am", f"change {folder}")
    return git(repo, "rev-parse", "HEAD")


def test_a_repository_of_environments_is_read_as_openenv_cards(tmp_path):
    repo = catalog_repository(tmp_path)
    read = catalog_read(source=str(repo))
    cards = {c["name"]: c for c in read.as_dict()["cards"]}
    assert set(cards) == {"guess-number", "metadata-maze", "legal-moves", "lucky-numbers"}
    assert cards["metadata-maze"]["path"] == "envs/metadata_maze"
    assert cards["metadata-maze"]["revision"] == git(repo, "rev-parse", "HEAD")
    assert cards["metadata-maze"]["digest"].startswith("sha256:") and cards["metadata-maze"]["license"] == "unknown"
    assert [i["path"] for i in read.issues] == ["envs/draft"], "a folder OpenEnv cannot read is named, not hidden"
    assert read.repository_uri == "https://github.com/local/team-envs.git" and read.stand_in

    out = StringIO()
    call_command("env", "catalog", str(repo), "--search", "corridor exit", "--json", stdout=out)
    assert [c["name"] for c in json.loads(out.getvalue())["cards"]] == ["metadata-maze"]


def test_cards_are_added_pinned_updates_are_offered_where_files_changed_and_the_export_loads(
    tmp_path, acme, alice, charlie, client_for
):
    repo = catalog_repository(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    outcomes = catalog_import(team=acme, user=alice, read=catalog_read(source=str(repo)),
                              only=["metadata-maze", "legal_moves"])  # fmt: skip
    assert sorted((o.name, o.status) for o in outcomes) == [("legal-moves", "added"), ("metadata-maze", "added")]
    maze = Environment.objects.get(team=acme, slug="metadata-maze")
    version = maze.versions.get()
    assert (version.source_kind, version.git_ref, version.git_subdir) == ("git", first, "envs/metadata_maze")
    assert version.pinned_ref == f"git:{first}" and version.catalog_card["displayName"] == "metadata-maze"
    assert maze.description == "Walk a corridor to its exit; the layout is in the observation's metadata."

    # A commit that changes one folder: every card is a new revision (OpenEnv's "superseded"), but only the folder
    # whose files changed is offered a new version; the card nobody took is offered to add.
    second = commit_change(repo, "legal_moves")
    source = CatalogSource.objects.get(team=acme)
    check = catalog_updates(source=source, user=alice)
    rows = {r.path: r for r in check.rows}
    assert {r.kind for r in check.rows} == {"superseded"} and len(check.rows) == 4
    assert (rows["envs/legal_moves"].files_changed, rows["envs/legal_moves"].offer) == (True, "new_version")
    assert (rows["envs/metadata_maze"].files_changed, rows["envs/metadata_maze"].offer) == (False, "")
    assert (rows["envs/guess_number"].slug, rows["envs/guess_number"].offer) == ("", "add")
    outcomes = catalog_import(team=acme, user=alice, read=check.read, only=["legal-moves", "metadata-maze"])
    assert sorted((o.name, o.status, o.version) for o in outcomes) == [
        ("legal-moves", "new_version", "2.0.0"), ("metadata-maze", "unchanged", "1.0.0")]  # fmt: skip
    legal = Environment.objects.get(team=acme, slug="legal-moves")
    assert legal.latest_version().git_ref == second and legal.versions.count() == 2

    # The export: what the team took, as a complete snapshot that OpenEnv's own loader and JSON schema accept.
    exported = tmp_path / "catalog.json"
    out = StringIO()
    call_command("env", "export", "--team", "acme", "--out", str(exported), stdout=out)
    snapshot = load_catalog(exported)
    assert sorted(e.data.source.path for e in snapshot.entries) == ["envs/legal_moves", "envs/metadata_maze"]
    assert snapshot.source.revision == second and snapshot.complete
    jsonschema.validate(json.loads(exported.read_text()), json.loads(SCHEMA.read_text()))
    assert json.loads(exported.read_text()) == json.loads(
        client_for(alice).get("/envs/catalog.json").content.decode())  # fmt: skip
    assert client_for(charlie).get("/envs/catalog.json?team=acme").status_code == 404, "another team's catalog"
    assert catalog_export(team=acme).digest == snapshot.digest

    # Another team takes a card from that snapshot, fetching the folder from a mirror (no internet needed).
    out = StringIO()
    call_command("env", "add", "--catalog", str(exported), "--fetch-from", str(repo), "--only", "metadata-maze",
                 "--team", "globex", "--json", stdout=out)  # fmt: skip
    taken = json.loads(out.getvalue())
    assert [(e["slug"], e["status"]) for e in taken["environments"]] == [("metadata-maze", "added")]
    theirs = Environment.objects.get(team__slug="globex", slug="metadata-maze").versions.get()
    assert theirs.git_ref == second and theirs.source_ref == repo.as_uri()


def test_a_catalog_that_cannot_be_used_says_why(tmp_path, acme):
    repo = catalog_repository(tmp_path)
    with pytest.raises(ValidationError) as unknown:
        catalog_import(team=acme, user=None, read=catalog_read(source=str(repo)), only=["chess"])
    assert "No card named 'chess'" in unknown.value.message_dict["only"][0]
    assert "guess-number, legal-moves, lucky-numbers, metadata-maze" in unknown.value.message_dict["only"][0]
    with pytest.raises(ValidationError) as no_root:
        catalog_read(source=str(repo), root="environments")
    assert "inventory root does not exist" in no_root.value.message_dict["catalog"][0]
    bad = tmp_path / "catalog.json"
    bad.write_text('{"schema_version": "0.1-draft", "entries": [], "entries": []}')
    with pytest.raises(CommandError, match="Not an OpenEnv catalog snapshot: JSON contains duplicate object keys"):
        call_command("env", "add", "--catalog", str(bad), "--json")
    with pytest.raises(CommandError, match="The repository could not be read"):
        call_command("env", "add", "--catalog", str(tmp_path / "nowhere"), "--json")
    assert not Environment.objects.exists() and not CatalogSource.objects.exists()


def test_the_pages_import_check_and_add_through_jobs_and_another_team_sees_none(
    tmp_path, acme, alice, charlie, client_for
):
    from webapp.jobs.models import Job
    from workers.worker.jobs import run_job  # what the worker runs

    repo = catalog_repository(tmp_path)
    answer = client_for(alice).post("/envs/catalog/import/", {"catalog": str(repo), "root": "envs",
                                                              "only": "metadata-maze"})  # fmt: skip
    job = Job.objects.get(kind=Job.Kind.CATALOG_IMPORT)
    assert answer.status_code == 302 and answer["Location"] == job.get_absolute_url()
    assert run_job(job.pk) == "succeeded"
    maze = Environment.objects.get(team=acme, slug="metadata-maze")
    page = client_for(alice).get(f"/envs/{maze.pk}/").content.decode()
    assert "From an OpenEnv catalog" in page and "stand-in identity" in page

    commit_change(repo, "metadata_maze")
    client_for(alice).post(f"/envs/{maze.pk}/catalog/check/")
    assert run_job(Job.objects.latest("pk").pk) == "succeeded"
    page = client_for(alice).get(f"/envs/{maze.pk}/").content.decode()
    assert 'id="catalog-changes"' in page and "a new version" in page and "add it" in page
    assert client_for(charlie).post(f"/envs/{maze.pk}/catalog/update/").status_code == 404
    client_for(alice).post(f"/envs/{maze.pk}/catalog/update/")
    job = Job.objects.latest("pk")
    assert sorted(job.params["only"]) == ["guess-number", "legal-moves", "lucky-numbers", "metadata-maze"]
    job.params["only"] = ["metadata-maze"]  # (the others would start three more servers: not what this tests)
    job.save(update_fields=["params"])
    assert run_job(job.pk) == "succeeded"
    assert maze.versions.count() == 2
    bad = client_for(alice).post("/envs/catalog/import/", {"catalog": "--upload-pack=evil", "root": "envs"})
    assert bad.status_code == 400 and Job.objects.count() == 3
