"""The catalog from the command line.

`manage.py env list --json`
`manage.py env add --folder PATH | --git URL [--ref REF] [--subdir DIR] | --image NAME | --url URL [--name N]
    [--env KEY=VALUE ...] [--fixed FIELD=JSON ...] [--reward sum|final|environment [--reward-field F]] --json`
`manage.py env add --catalog REPO|SNAPSHOT.json [--ref REF] [--root envs] [--only NAME,…] --json`
`manage.py env catalog REPO|SNAPSHOT.json [--search WORDS] --json`; `manage.py env updates SLUG [--add] --json`
`manage.py env export [--source ID] [--out FILE]`: OpenEnv catalog cards in and out (webapp/catalog/catalog_import.py)
`manage.py env asset add SLUG PATH --as VARIABLE [--name NAME] [--version V] --json`: a data file its server reads
`manage.py env testdrive SLUG [--version V] [--tool T --arguments JSON | --action JSON] --provider process|docker`
"""

from __future__ import annotations

import json
import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from envs.tools import ToolSpec, example_arguments
from webapp.accounts.models import Team
from webapp.catalog import services
from webapp.catalog.models import Environment, EnvironmentVersion, SourceKind, Visibility
from webapp.catalog.version_settings import assignments_parse, names_parse
from webapp.core.cli_errors import validation_text


def _version_dict(v: EnvironmentVersion) -> dict:
    return {
        "label": v.label,
        "source_kind": v.source_kind,
        "source_ref": v.source_ref,
        "git_ref": v.git_ref,
        "git_subdir": v.git_subdir,
        "pinned_ref": v.pinned_ref,
        "capacity": v.capacity,
        "capacity_measured": v.capacity_measured,
        "capacity_note": v.capacity_note,
        "effective_capacity": v.effective_capacity,
        "seeding": v.seeding,
        "mcp": v.mcp,
        "transport": v.transport,
        "settings": v.settings,
        "reward": v.reward_rule.as_dict(),
        "dependencies": v.dependencies,
        "tools": v.tools,
        "frozen": v.is_frozen,
        "created_at": v.created_at.isoformat(),
    }


def team_resolve(slug: str | None) -> Team:
    if slug:
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            raise CommandError(f"no team {slug!r}")
        return team
    teams = list(Team.objects.order_by("pk")[:2])
    if len(teams) != 1:
        raise CommandError("name the team with --team" if teams else "there is no team yet: run bootstrap first")
    return teams[0]


def environment_resolve(slug: str, team: str | None) -> Environment:
    qs = Environment.objects.filter(slug=slug).select_related("team")
    if team:
        qs = qs.filter(team__slug=team)
    found = list(qs[:2])
    if not found:
        raise CommandError(f"no environment {slug!r}" + (f" in team {team!r}" if team else ""))
    if len(found) > 1:
        raise CommandError(f"several teams have an environment {slug!r}; name one with --team")
    return found[0]


def version_resolve(environment: Environment, label: str | None) -> EnvironmentVersion:
    """The version of that label, or the latest."""
    versions = environment.versions.all()
    version = versions.filter(label=label).first() if label else versions.first()
    if version is None:
        raise CommandError(f"{environment.slug} has no version {label or ''}".strip())
    return version


class Command(BaseCommand):
    help = "The environment catalog from the command line."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="list environments and their versions")
        listing.add_argument("--json", action="store_true")
        add = sub.add_parser("add", help="add an environment (or a new version of one) from a source")
        source = add.add_mutually_exclusive_group(required=True)
        source.add_argument("--folder", help="an OpenEnv folder on this machine")
        source.add_argument("--git", help="a git repository URL (file:// works too)")
        source.add_argument("--image", help="a Docker image")
        source.add_argument("--url", help="a running server's URL")
        source.add_argument("--builtin", help="a built-in environment's name")
        source.add_argument("--catalog", metavar="SOURCE",
                            help="every environment card of a git repository (URL or folder; --root, default envs/) "
                                 "or of an OpenEnv catalog snapshot JSON; --only NAME,… to choose")  # fmt: skip
        add.add_argument("--ref", default="", help="git branch, tag or commit (default: the default branch)")
        add.add_argument("--subdir", default="", help="the environment's folder in the repository (envs/echo_env)")
        add.add_argument("--name", help="the environment's name (default: the folder's name)")
        add.add_argument("--slug", default="")
        add.add_argument("--team", help="team slug (default: the only team)")
        add.add_argument("--version", dest="label", help="version label (default: 1.0.0, or the next number)")
        add.add_argument("--capacity", type=int, default=64, help="sessions one replica may take (declared)")
        add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="server variable")
        add.add_argument("--fixed", action="append", default=[], metavar="FIELD=JSON",
                         help="an action field sent with every call and hidden from the model")  # fmt: skip
        add.add_argument("--requirement", action="append", default=[], metavar="REQ",
                         help="an extra PyPI package for the server, beside what its folder declares")  # fmt: skip
        add.add_argument("--asset", action="append", default=[], metavar="PATH[=VARIABLE]",
                         help="a data file or folder its server reads, and the variable that names it "
                              "(NLTK_DATA, HF_HOME, FINQA_DATA_PATH, …)")  # fmt: skip
        add.add_argument(
            "--tools",
            dest="offered_tools",
            help="comma separated tools the model is offered (default: every tool the server lists)",
        )
        add.add_argument("--observation-fields", help="comma separated fields the model reads")
        add.add_argument("--reset-args", help="comma separated dataset columns that reach reset()")
        add.add_argument(
            "--reward",
            choices=["sum", "final", "environment"],
            help="whose reward a run learns from (default: what openenv.yaml declares, else the sum)",
        )
        add.add_argument("--reward-field", help="the observation field an environment-owned reward is read from")
        add.add_argument("--root", default="envs", help="with --catalog: the folder whose sub-folders are environments")
        add.add_argument("--only", help="with --catalog: comma separated card (or folder) names to add")
        add.add_argument("--publisher", default="trainyard.local", help="with --catalog: the cards' publisher (DNS)")
        add.add_argument("--repository-uri", default="",
                         help="with --catalog: the GitHub identity the cards name the repository by (default: its "
                              "URL if on GitHub, else a stand-in https://github.com/local/NAME.git)")  # fmt: skip
        add.add_argument(
            "--fetch-from",
            default="",
            help="with a snapshot: fetch the folders from this repository (a mirror) instead",
        )
        add.add_argument("--shared", action="store_true", help="share with every team")
        add.add_argument("--json", action="store_true")
        cards = sub.add_parser("catalog", help="list (and search) the environment cards of a catalog, adding nothing")
        cards.add_argument("source", help="a git repository (URL or folder) or a catalog snapshot JSON")
        cards.add_argument("--ref", default="")
        cards.add_argument("--root", default="envs")
        cards.add_argument("--search", default="", help="words matched against names, descriptions, tags and tools")
        cards.add_argument("--repository-uri", default="", help="the GitHub identity the cards name the repository by")
        cards.add_argument("--json", action="store_true")
        updates = sub.add_parser("updates", help="check a catalog-imported environment's source for updates")
        updates.add_argument("slug", help="an environment taken from a catalog")
        updates.add_argument("--team", help="team slug, when several teams use the same environment slug")
        updates.add_argument("--add", action="store_true", help="add what is offered: new versions, new cards")
        updates.add_argument("--json", action="store_true")
        export = sub.add_parser("export", help="the team's catalog-imported environments as an OpenEnv snapshot JSON")
        export.add_argument("--team", help="team slug (default: the only team)")
        export.add_argument("--source", type=int, help="the catalog source's id (default: the latest)")
        export.add_argument("--out", help="write to this file (default: standard output)")
        asset = sub.add_parser("asset", help="a version's data assets (files its server needs and cannot download)")
        asset_sub = asset.add_subparsers(dest="asset_action", required=True)
        asset_add = asset_sub.add_parser("add", help="give a version a data file or folder")
        asset_add.add_argument("slug")
        asset_add.add_argument("path", help="the file or folder on this machine")
        asset_add.add_argument("--as", dest="variable", default="", metavar="NAME",
                               help="the variable the environment reads for it: NLTK_DATA, HF_HOME (offline then), "
                                    "or its own setting (FINQA_DATA_PATH); default: NLTK_DATA or HF_HOME for "
                                    "such folders")  # fmt: skip
        asset_add.add_argument("--name", default="", help="its name on the server (default: the file's)")
        asset_add.add_argument("--version", help="version label (default: the latest)")
        asset_add.add_argument("--team", help="team slug, when several teams use the same environment slug")
        asset_add.add_argument("--json", action="store_true")
        drive = sub.add_parser("testdrive", help="provision a version, reset, take one step, tear down")
        drive.add_argument("slug")
        drive.add_argument("--version", help="version label (default: the latest)")
        drive.add_argument("--team", help="team slug, when several teams use the same environment slug")
        drive.add_argument("--provider", choices=["process", "docker", "url"])
        drive.add_argument("--tool", help="the tool to call (default: the first)")
        drive.add_argument("--arguments", help="the tool's arguments as JSON (default: a valid example)")
        drive.add_argument("--action", help="a raw step action as JSON, instead of a tool call")
        drive.add_argument("--seed", type=int, default=0)
        drive.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        if options["action"] == "list":
            return self.list(options)
        if options["action"] == "add":
            return self.catalog_add(options) if options.get("catalog") else self.add(options)
        if options["action"] == "catalog":
            return self.catalog(options)
        if options["action"] == "updates":
            return self.updates(options)
        if options["action"] == "export":
            return self.export(options)
        if options["action"] == "asset":
            return self.asset_add(options)
        return self.testdrive(options)

    def catalog_add(self, options) -> None:
        from tqdm import tqdm

        from webapp.catalog.catalog_import import catalog_import, catalog_read

        team = team_resolve(options.get("team"))
        bar = tqdm(total=100, unit="%", file=sys.stderr, disable=options["json"] and not sys.stderr.isatty())

        def progress(message: str, fraction: float) -> None:
            bar.set_postfix_str(message[:60])
            bar.update(max(0, round(100 * fraction) - bar.n))

        try:
            progress("reading the catalog", 0.0)
            read = catalog_read(source=options["catalog"], ref=options["ref"], root=options["root"],
                                publisher=options["publisher"], repository_uri=options["repository_uri"],
                                fetch_from=options["fetch_from"])  # fmt: skip
            outcomes = catalog_import(team=team, user=None, read=read, only=names_parse(options.get("only")),
                                      progress=progress)  # fmt: skip
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        finally:
            bar.close()
        added = [o.as_dict() for o in outcomes if o.status in ("added", "new_version")]
        failed = [o.as_dict() for o in outcomes if o.status == "failed"]
        result = {"environments": added, "unchanged": [o.as_dict() for o in outcomes if o.status == "unchanged"],
                  "failed": failed, "catalog": read.as_dict()}  # fmt: skip
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, default=str))
        else:
            for outcome in outcomes:
                where = f"{outcome.slug}@{outcome.version}" if outcome.slug else outcome.error
                self.stdout.write(f"{outcome.status:<12} {outcome.name:<24} {outcome.path:<28} {where}")
        if failed and not added:
            raise CommandError(f"no card could be added ({failed[0]['name']}: {failed[0]['error']})")

    def catalog(self, options) -> None:
        from envs.catalog_cards import card_summary, catalog_search
        from webapp.catalog.catalog_import import catalog_read

        try:
            read = catalog_read(source=options["source"], ref=options["ref"], root=options["root"],
                                repository_uri=options["repository_uri"])  # fmt: skip
            cards = catalog_search(read.snapshot, options["search"])
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        except ValueError as exc:  # OpenEnv's search refuses what it cannot search (an overlong query)
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps({**read.as_dict(), "cards": [card_summary(c) for c in cards]}, indent=2))
            return
        for card in cards:
            self.stdout.write(f"{card.display_name:<24} {card.data.license:<14} {card.data.source.path:<28} "
                              f"{', '.join(card.tags)}")  # fmt: skip
        for issue in read.issues:
            self.stdout.write(f"left out: {issue['path']}: {issue['message']}")

    def updates(self, options) -> None:
        from webapp.catalog.catalog_import import catalog_import, catalog_updates

        environment = environment_resolve(options["slug"], options.get("team"))
        if environment.catalog_source is None:
            raise CommandError(f"{environment.slug} was not taken from a catalog (env add --catalog)")
        try:
            check = catalog_updates(source=environment.catalog_source, user=None)
            result = check.as_dict()
            offered = [row.path for row in check.rows if row.offer]
            if options["add"] and offered:
                chosen = [c.display_name for c in check.read.cards if c.data.source.path in offered]
                outcomes = catalog_import(team=environment.team, user=None, read=check.read, only=chosen)
                result["added"] = [o.as_dict() for o in outcomes]
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, default=str))
            return
        for row in check.rows:
            changed = {True: "files changed", False: "same files", None: "not taken"}[row.files_changed]
            self.stdout.write(f"{row.kind:<11} {row.name:<24} {row.path:<28} {changed:<14} {row.offer}")

    def export(self, options) -> None:
        from envs.catalog_cards import snapshot_json
        from webapp.catalog.catalog_import import catalog_export
        from webapp.catalog.models import CatalogSource

        team = team_resolve(options.get("team"))
        source = None
        if options.get("source"):
            source = CatalogSource.objects.filter(pk=options["source"], team=team).first()
            if source is None:
                raise CommandError(f"{team.slug} has no catalog source {options['source']}")
        try:
            snapshot = catalog_export(team=team, source=source)
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        text = json.dumps(snapshot_json(snapshot), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        if options.get("out"):
            from pathlib import Path

            Path(options["out"]).write_text(text)
        else:
            self.stdout.write(text, ending="")

    def add(self, options) -> None:
        from tqdm import tqdm

        kind, ref = next((k, options[k]) for k in ("folder", "git", "image", "url", "builtin") if options.get(k))
        team = team_resolve(options.get("team"))
        try:
            settings = {
                "env": assignments_parse(options["env"], field="env", json_values=False),
                "fixed": assignments_parse(options["fixed"], field="fixed", json_values=True),
                "offered_tools": names_parse(options.get("offered_tools")),
                "observation_fields": names_parse(options.get("observation_fields")),
                "reset_args": names_parse(options.get("reset_args")),
                "requirements": options["requirement"],
                "reward": (
                    {"kind": options.get("reward") or "environment", "field": options["reward_field"]}
                    if options.get("reward_field")
                    else options.get("reward")
                ),
            }
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        settings = {k: v for k, v in settings.items() if v}
        if options["asset"]:
            from pathlib import Path

            from webapp.catalog.version_assets import asset_prepare

            try:
                given = [item.partition("=") for item in options["asset"]]
                settings["assets"] = [asset_prepare(Path(path), variable=variable).as_dict()
                                      for path, _, variable in given]  # fmt: skip
            except ValidationError as exc:
                raise CommandError(validation_text(exc)) from exc
        if kind == "folder":
            from pathlib import Path

            ref = str(Path(ref).expanduser().resolve())
        name = options.get("name") or _default_name(kind, ref, options["subdir"])
        phases = ["reading the source", "starting the server", "reading its schema", "measuring its capacity",
                  "checking what reset(seed) does"]  # fmt: skip
        bar = tqdm(
            total=len(phases), unit="phase", file=sys.stderr, disable=options["json"] and not sys.stderr.isatty()
        )

        def progress(message: str) -> None:
            bar.set_postfix_str(message[:60])
            if any(message.startswith(p.split(" ")[0]) for p in phases):
                bar.update(1)

        common = {"user": None, "source_kind": SourceKind(kind).value, "source_ref": ref,
                  "capacity": options["capacity"], "git_ref": options["ref"], "git_subdir": options["subdir"],
                  "settings": settings, "progress": progress}  # fmt: skip
        try:
            existing = Environment.objects.filter(team=team, slug=options["slug"] or _slug(name)).first()
            if existing is None:
                environment = services.environment_create(
                    team=team, name=name, slug=options["slug"], label=options.get("label") or "1.0.0",
                    visibility=Visibility.SHARED if options["shared"] else Visibility.TEAM, **common,
                )  # fmt: skip
                version = environment.latest_version()
            else:
                label = options.get("label") or f"{existing.versions.count() + 1}.0.0"
                version = services.version_add(environment=existing, label=label, **common)
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        finally:
            bar.n = bar.total
            bar.close()
        result = {"environment": version.environment.slug, "team": team.slug, "version": _version_dict(version)}
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, default=str))
            return
        tools = ", ".join(t["name"] for t in version.tools)
        self.stdout.write(
            f"added {version} · tools: {tools} · capacity {version.capacity} declared, "
            f"{version.capacity_measured} measured · seed: {version.get_seeding_display()} · "
            f"dependencies: {version.dependencies.get('status', 'none')}"
        )

    def list(self, options) -> None:
        rows = []
        for env in Environment.objects.select_related("team").prefetch_related("versions").order_by("slug"):
            rows.append(
                {
                    "slug": env.slug,
                    "name": env.name,
                    "team": env.team.slug,
                    "visibility": env.visibility,
                    "tags": env.tags,
                    "description": env.description,
                    "versions": [_version_dict(v) for v in env.versions.all()],
                }
            )
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for row in rows:
            latest = row["versions"][0]["label"] if row["versions"] else "-"
            tools = ", ".join(t["name"] for t in (row["versions"][0]["tools"] if row["versions"] else []))
            self.stdout.write(f"{row['slug']:<20} {latest:<10} {row['team']:<12} tools: {tools}")

    def asset_add(self, options) -> None:
        from pathlib import Path

        from webapp.catalog.version_assets import version_asset_add

        environment = environment_resolve(options["slug"], options.get("team"))
        version = version_resolve(environment, options["version"])
        try:
            version = version_asset_add(version=version, user=None, path=Path(options["path"]),
                                        name=options["name"], variable=options["variable"])  # fmt: skip
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        result = {"environment": environment.slug, "version": version.label, "assets": version.settings["assets"]}
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
            return
        for item in result["assets"]:
            self.stdout.write(f"{item['name']} ({item['size']} bytes, sha256 {item['sha256'][:12]}…) as {item['as']}")

    def testdrive(self, options) -> None:
        environment = environment_resolve(options["slug"], options.get("team"))
        version = version_resolve(environment, options["version"])
        call: dict = {}
        try:
            if options["action"]:
                call["action"] = json.loads(options["action"])
            else:
                tool = options.get("tool") or (version.tools[0]["name"] if version.tools else "")
                spec = services.version_tool(version, tool)
                arguments = json.loads(options["arguments"]) if options.get("arguments") else None
                call.update(tool=tool, arguments=arguments if arguments is not None else example_arguments(spec))
        except json.JSONDecodeError as exc:
            raise CommandError(f"not JSON: {exc}") from exc
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        action = call.get("action") or call
        try:
            drive = services.version_testdrive(
                version=version,
                **call,
                provider_kind=options["provider"],
                seed=options["seed"],
                progress=lambda message: print(f"… {message}", file=sys.stderr, flush=True),
            )
        except (ValidationError, ValueError) as exc:
            raise CommandError("; ".join(getattr(exc, "messages", [str(exc)]))) from exc
        result = {"environment": environment.slug, "version": version.label, **drive.as_dict()}
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, default=str))
        else:
            self.stdout.write(f"reset: {drive.reset}\naction: {action}\nstep: {drive.step}")
        if drive.error:
            raise CommandError(drive.error)


def example_action(tools: list[dict]) -> dict:
    """The first tool's wire action with example arguments (kept for scripts that send raw actions)."""
    if not tools:
        return {}
    spec = ToolSpec.from_dict(tools[0])
    return spec.action(example_arguments(spec))


def _slug(name: str) -> str:
    from django.utils.text import slugify

    return slugify(name)


def _default_name(kind: str, ref: str, subdir: str) -> str:
    from pathlib import Path

    if kind == "git":
        return Path(subdir.strip("/")).name if subdir.strip("/") else Path(ref.rstrip("/")).name.removesuffix(".git")
    if kind == "folder":
        return Path(ref).name
    if kind == "image":
        return ref.split("/")[-1].split(":")[0]
    return ref
