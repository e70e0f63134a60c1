"""`manage.py bootstrap`: idempotent set-up of the demo team and user, the built-in environments, and the tiny local
model (built once, with a progress bar: a few CPU minutes)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from webapp.core.schema import require_current_schema
from webapp.demo.bootstrap import demo_bootstrap


class Command(BaseCommand):
    help = "Create the demo team and user, register the built-in environments, build the tiny model. Safe to rerun."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--skip-model", action="store_true", help="do not build the tiny local model")

    def handle(self, *args, **options) -> None:
        require_current_schema()
        demo_bootstrap(stdout=self.stdout)
        if options["skip_model"]:
            return
        from tqdm import tqdm

        from webapp.artifacts.model_names import tiny_model_dir
        from workers.models.published import tiny_model
        from workers.models.tiny import model_current

        if not model_current(tiny_model_dir()):
            self.stdout.write("Building the tiny local model (once; a few CPU minutes)\n")
        bar = tqdm(total=100, unit="%", bar_format="{l_bar}{bar}| {n:.0f}% {postfix}", leave=False)

        def show(message: str, fraction: float) -> None:
            bar.n = round(fraction * 100)
            bar.set_postfix_str(message)
            bar.refresh()

        path = tiny_model(progress=show)
        bar.close()
        self.stdout.write(f"Model tiny-local (CPU): {path}\n")
