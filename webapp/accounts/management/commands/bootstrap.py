"""`manage.py bootstrap`: idempotent set-up of the demo team and user, then every registered bootstrap step."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from webapp.core.bootstrap import run_bootstrap


class Command(BaseCommand):
    help = "Create the demo team and user and register built-in things. Safe to run again."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--skip-model", action="store_true", help="do not build the tiny local model")

    def handle(self, *args, **options) -> None:
        run_bootstrap(stdout=self.stdout, skip_model=options["skip_model"])
