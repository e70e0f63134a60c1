"""`manage.py trust_check SLUG [--version V] [--provider process|docker|url] --json`: run the probes now.

`--compare-url URL` instead compares a running deployment's contract (schemas, MCP tools) with the version's pinned
one: are the tools a model trained against the tools it meets in production? Exit status 1 when they differ."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from envs.contract import ContractUnreadable
from webapp.catalog.contracts import contract_drift, version_contract_hash
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
        parser.add_argument("--load", action="store_true", help="also measure the load profile (1, 8, 32, capacity)")
        parser.add_argument("--compare-url", metavar="URL", help="compare this deployment's contract; run no probes")

    def handle(self, *args, **options) -> None:
        environment = environment_resolve(options["slug"], options.get("team"))
        versions = environment.versions.all()
        version = versions.filter(label=options["version"]).first() if options["version"] else versions.first()
        if version is None:
            raise CommandError(f"{environment.slug} has no such version")
        if options["compare_url"]:
            self.compare(version, options["compare_url"].rstrip("/"), as_json=options["json"])
            return
        report = TrustReport.objects.create(version=version)
        report = trust_check_run(
            report=report, provider_kind=options["provider"],
            progress=lambda m: print(f"… {m}", file=sys.stderr, flush=True), load=options["load"],
        )  # fmt: skip
        version.refresh_from_db()
        body = {
            "environment": environment.slug,
            "version": version.label,
            "verdict": report.verdict,
            "error": report.error,
            "probes": report.results,
            "openenv_validation": [{k: v for k, v in o.items() if k != "report"} for o in report.openenv_validation],
        }
        if options["load"]:
            body["load_profile"] = version.load_profile
        if options["json"]:
            self.stdout.write(json.dumps(body, indent=2))
        else:
            for r in report.results:
                self.stdout.write(f"{r['status']:<15} {r['name']:<18} {r['summary']}")
                if r["status"] == "failed":
                    for line in [*r.get("evidence", [])[:5], r.get("advice", "")]:
                        if line:
                            self.stdout.write(f"{'':<34} {line}")
            for outcome in report.openenv_validation:
                failing = [c["id"] for c in outcome["checks"] if c["status"] in {"fail", "error"}]
                self.stdout.write(f"{outcome['verdict']:<15} openenv validate ({outcome['mode']})"
                                  + (f": failing {', '.join(failing)}" if failing else ""))  # fmt: skip
            for row in version.load_profile.get("levels", []) if options["load"] else []:
                self.stdout.write(f"{'load':<15} {row['sessions']:>3} sessions: {row['steps_per_s']} steps/s, p50 "
                                  f"{row['p50_ms']} ms, p99 {row['p99_ms']} ms, {row['errors']} errors")  # fmt: skip
        if report.state == TrustReport.State.ERROR:
            raise CommandError(report.error)

    def compare(self, version, url: str, *, as_json: bool) -> None:
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--compare-url must be an http(s) URL, not {url!r}")
        try:
            differences = contract_drift(version, url)
        except ContractUnreadable as exc:
            raise CommandError(f"{url} did not say what it serves: {exc}") from exc
        body = {"environment": version.environment.slug, "version": version.label, "compare_url": url,
                "same": not differences, "pinned_contract": version_contract_hash(version),
                "differences": differences}  # fmt: skip
        if as_json:
            self.stdout.write(json.dumps(body, indent=2))
        elif differences:
            self.stdout.write(f"{url} differs from {version} (pinned → there):")
            for line in differences:
                self.stdout.write(f"  {line}")
        else:
            self.stdout.write(f"{url} serves the same tools and schemas as {version}")
        if differences:
            raise CommandError(f"{url} does not serve {version}'s contract")
