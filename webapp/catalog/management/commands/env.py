"""`manage.py env list --json` and `manage.py env testdrive SLUG [--version V] --provider process|docker --json`."""

from __future__ import annotations

import json
import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from webapp.catalog import services
from webapp.catalog.models import Environment, EnvironmentVersion


def _version_dict(v: EnvironmentVersion) -> dict:
    return {
        "label": v.label,
        "source_kind": v.source_kind,
        "source_ref": v.source_ref,
        "pinned_ref": v.pinned_ref,
        "capacity": v.capacity,
        "tools": v.tools,
        "frozen": v.is_frozen,
        "created_at": v.created_at.isoformat(),
    }


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


class Command(BaseCommand):
    help = "The environment catalog from the command line."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="list environments and their versions")
        listing.add_argument("--json", action="store_true")
        drive = sub.add_parser("testdrive", help="provision a version, reset, take one step, tear down")
        drive.add_argument("slug")
        drive.add_argument("--version", help="version label (default: the latest)")
        drive.add_argument("--team", help="team slug, when several teams use the same environment slug")
        drive.add_argument("--provider", choices=["process", "docker", "url"])
        drive.add_argument("--action", help="the step's action as JSON (default: a valid example from the schema)")
        drive.add_argument("--seed", type=int, default=0)
        drive.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        if options["action"] == "list":
            return self.list(options)
        return self.testdrive(options)

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

    def testdrive(self, options) -> None:
        environment = environment_resolve(options["slug"], options.get("team"))
        versions = environment.versions.all()
        version = versions.filter(label=options["version"]).first() if options["version"] else versions.first()
        if version is None:
            raise CommandError(f"{environment.slug} has no version {options['version'] or ''}".strip())
        action = json.loads(options["action"]) if options["action"] else example_action(version.tools)
        try:
            drive = services.version_testdrive(
                version=version,
                action=action,
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
    """A schema-valid action for the first tool: the first enum value, else a plain value of the right type."""
    if not tools:
        return {}
    action = {}
    params = tools[0].get("parameters", {})
    for name in params.get("required", []):
        prop = params.get("properties", {}).get(name, {})
        if "enum" in prop:
            action[name] = prop["enum"][0]
        elif "default" in prop:
            action[name] = prop["default"]
        else:
            kind = prop.get("type")
            action[name] = {"integer": 1, "number": 1.0, "boolean": True, "string": "hello"}.get(kind)
    return action
