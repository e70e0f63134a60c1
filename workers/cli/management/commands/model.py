"""Models for runs. `manage.py model warmstart --env SLUG [--version V] [--team T] --json` teaches the tiny local model
to call one version's tools (a short SFT on episodes played against its server), giving `tiny-local@SLUG:V`;
`manage.py model list --json` lists the models in the artifact store (any host can pull them)."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from webapp.catalog.management.commands.env import environment_resolve


class Command(BaseCommand):
    help = "Local models: warm starts of the tiny model on an environment version."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        warm = sub.add_parser("warmstart", help="warm-start the tiny model on a version's tools")
        warm.add_argument("--env", required=True, help="environment slug")
        warm.add_argument("--version", help="version label (default: the latest)")
        warm.add_argument("--team", help="team slug, when several teams use the same environment slug")
        warm.add_argument("--json", action="store_true")
        listing = sub.add_parser("list", help="models on this machine")
        listing.add_argument("--json", action="store_true")
        export = sub.add_parser("export", help="copy a run's saved model out (a LoRA adapter merged on request)")
        export.add_argument("--run", type=int, required=True, help="run id")
        export.add_argument("--model", default="final", help="final (default) or checkpoint-N")
        export.add_argument("--merge", action="store_true", help="merge a LoRA adapter into its base model")
        export.add_argument("--out", required=True, help="folder to write (created)")
        export.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        if options["action"] == "list":
            return self.list(options)
        if options["action"] == "export":
            return self.export(options)
        return self.warmstart(options)

    def warmstart(self, options) -> None:
        from tqdm import tqdm

        from webapp.artifacts.model_names import warmstart_name
        from workers.models.published import warm_start
        from workers.models.warmstart import WarmStartError

        environment = environment_resolve(options["env"], options.get("team"))
        versions = environment.versions.all()
        version = versions.filter(label=options["version"]).first() if options["version"] else versions.first()
        if version is None:
            raise CommandError(f"{environment.slug} has no version {options['version'] or ''}".strip())
        bar = tqdm(total=100, unit="%", file=sys.stderr, bar_format="{l_bar}{bar}| {n:.0f}% {postfix}")

        def show(message: str, fraction: float) -> None:
            bar.n = round(fraction * 100)
            bar.set_postfix_str(message[:60])
            bar.refresh()

        try:
            path = warm_start(version, progress=show)
        except (WarmStartError, Exception) as exc:
            raise CommandError(f"the warm start failed: {type(exc).__name__}: {exc}") from exc
        finally:
            bar.close()
        result = {
            "model": warmstart_name(version),
            "path": str(path),
            "environment": environment.slug,
            "version": version.label,
            "recipe": json.loads((path / "trainyard-recipe.json").read_text()),
        }
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
        else:
            self.stdout.write(f"{result['model']} is ready at {path}")

    def list(self, options) -> None:
        from webapp.artifacts.model_names import tiny_model_built, tiny_model_dir, warmstarted_models
        from webapp.catalog.models import EnvironmentVersion

        rows = []
        if tiny_model_built():
            rows.append({"model": "tiny-local", "path": str(tiny_model_dir())})
        versions = EnvironmentVersion.objects.select_related("environment")
        rows += [{"model": name, "environment": v.environment.slug, "version": v.label}
                 for name, v in warmstarted_models(versions)]  # fmt: skip
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
        else:
            for row in rows:
                self.stdout.write(row["model"])

    def export(self, options) -> None:
        from pathlib import Path

        from tqdm import tqdm

        from webapp.artifacts.saved_models import saved_model_get, saved_models
        from webapp.runs.models import Run
        from workers.models.export import adapter_base_name, export_model
        from workers.models.resolve import model_path

        run = Run.objects.filter(pk=options["run"]).first()
        if run is None:
            raise CommandError(f"no run {options['run']}")
        saved = saved_model_get(run, options["model"])
        if saved is None:
            names = ", ".join(m.name for m in saved_models(run)) or "none"
            raise CommandError(f"run {run.pk} saved no {options['model']} (it has: {names})")
        out = Path(options["out"]).resolve()
        if out.exists() and any(out.iterdir()):
            raise CommandError(f"{out} exists and is not empty: name a new folder")
        bar = tqdm(total=100, unit="%", file=sys.stderr, bar_format="{l_bar}{bar}| {n:.0f}% {postfix}")

        def show(message: str, fraction: float) -> None:
            bar.n = round(fraction * 100)
            bar.set_postfix_str(message[:60])
            bar.refresh()

        try:
            export_model(saved, out, merge=options["merge"], progress=show,
                         base=lambda: model_path(adapter_base_name(saved), run.team))  # fmt: skip
        finally:
            bar.close()
        merged = options["merge"] and saved.adapter
        result = {"run": run.pk, "model": saved.model_name, "step": saved.step, "path": str(out),
                  "kind": "full model (merged)" if merged else saved.kind}  # fmt: skip
        self.stdout.write(json.dumps(result, indent=2) if options["json"] else f"{saved.model_name} -> {out}")
