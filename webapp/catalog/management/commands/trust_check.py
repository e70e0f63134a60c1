"""`manage.py trust_check SLUG [--version V] [--provider process|docker|url] --json`: run the probes now."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from webapp.catalog.management.commands.env import environment_resolve
from webapp.catalog.models import TrustReport
from webapp.catalog.trust import trust_check_run


class Command(BaseCommand):
    help = "Prove resets are clean, sessions isolated and rewards honest for an environment version."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Our --version names an environment version; it replaces Django's --version (the framework's own).
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--version", help="version label (default: the latest)")
        parser.add_argument("--team", help="team slug, when several teams use the slug")
        parser.add_argument("--provider", choices=["process", "docker", "url"])
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        environment = environment_resolve(options["slug"], options.get("team"))
        versions = environment.versions.all()
        version = versions.filter(label=options["version"]).first() if options["version"] else versions.first()
        if version is None:
            raise CommandError(f"{environment.slug} has no such version")
        report = TrustReport.objects.create(version=version)
        report = trust_check_run(
            report=report, provider_kind=options["provider"],
            progress=lambda m: print(f"… {m}", file=sys.stderr, flush=True),
        )  # fmt: skip
        body = {
            "environment": environment.slug,
            "version": version.label,
            "verdict": report.verdict,
            "error": report.error,
            "probes": report.results,
        }
        if options["json"]:
            self.stdout.write(json.dumps(body, indent=2))
        else:
            for r in report.results:
                self.stdout.write(f"{r['status']:<15} {r['name']:<18} {r['summary']}")
        if report.state == TrustReport.State.ERROR:
            raise CommandError(report.error)
